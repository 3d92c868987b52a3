import { isUtf8Bytes } from "@switchyard/calls";
import type { IncomingMessage } from "node:http";
import { createGunzip, type Gunzip } from "node:zlib";

/** The bounds of one request body, in bytes. */
export interface BodyLimits {
  /** The body after decoding (after gunzip, or as sent without Content-Encoding). */
  decoded: number;
  /** The body as sent: bounds a gzip body that decodes small but takes long to send and inflate. */
  wire: number;
  /**
   * Raw bytes of a refused body read on and thrown away (never inflated), so a
   * client that is still sending finishes and reads the answer on a connection
   * it can keep. Past it the answer says `Connection: close` and the connection
   * is closed.
   */
  drain: number;
}

export type BodyRead =
  | { ok: true; /** The decoded body, valid UTF-8 (a byte order mark included: see bodyText). */ buffer: Buffer; bytes: number }
  | {
      ok: false;
      /**
       * too_large: over `decoded`; wire_too_large: over `wire`; not_utf8: the (decoded) body is not
       * UTF-8, which JSON text must be (decoding it would turn the bad bytes into U+FFFD, silently);
       * aborted: the client went away (nothing to answer).
       */
      reason: "too_large" | "wire_too_large" | "bad_encoding" | "not_utf8" | "aborted";
      /** Whether the rest of the body was left unread (over the drain bound): answer, then close the connection. */
      closeConnection: boolean;
    };

/** Bytes gunzip hands over at a time: fewer, larger chunks than its 16 KB default cost less per byte. */
const GUNZIP_CHUNK_BYTES = 64 * 1024;

/**
 * Reads a request body (gzip-encoded or plain), refusing it as soon as it
 * passes a limit: gunzip is destroyed at once, so a small body that inflates
 * to gigabytes costs no more than reading `limits.decoded` bytes of it. The
 * rest of a refused body is read raw and discarded up to `limits.drain`
 * bytes. One leading UTF-8 byte order mark is dropped, as JSON.parse would
 * refuse it.
 */
export function readBody(request: IncomingMessage, limits: BodyLimits): Promise<BodyRead> {
  const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
  if (encoding !== "gzip" && encoding !== "identity") return refuseAndDrain(request, "bad_encoding", limits.drain);

  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let wireBytes = 0;
    let decodedBytes = 0;
    let settled = false;
    const gunzip: Gunzip | undefined = encoding === "gzip" ? createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES }) : undefined;

    const stopReading = () => {
      settled = true;
      request.off("data", onWire);
      request.off("end", onWireEnd);
      request.off("close", onClose);
      if (gunzip) {
        gunzip.removeAllListeners("data");
        gunzip.removeAllListeners("end");
        // An error after the stop (e.g. from the destroy) must not go unhandled.
        gunzip.removeAllListeners("error");
        gunzip.on("error", () => {});
        // Stops inflating now: input already written to it is dropped, not decoded.
        gunzip.destroy();
      }
    };
    const refuse = (reason: "too_large" | "wire_too_large" | "bad_encoding") => {
      if (settled) return;
      stopReading();
      // The request was paused while gunzip caught up; the drain resumes it.
      resolve(refuseAndDrain(request, reason, limits.drain));
    };
    const finish = () => {
      if (settled) return;
      stopReading();
      const bytes = Buffer.concat(chunks, decodedBytes);
      if (!isUtf8Bytes(bytes)) return resolve({ ok: false, reason: "not_utf8", closeConnection: false });
      resolve({ ok: true, buffer: bytes, bytes: decodedBytes });
    };
    const onDecoded = (chunk: Buffer) => {
      if (settled) return;
      decodedBytes += chunk.length;
      if (decodedBytes > limits.decoded) return refuse("too_large");
      chunks.push(chunk);
    };
    const onWire = (chunk: Buffer) => {
      wireBytes += chunk.length;
      if (wireBytes > limits.wire) return refuse("wire_too_large");
      if (!gunzip) return onDecoded(chunk);
      // Backpressure by hand (no pipe), so a refusal can cut the two apart at once.
      if (!gunzip.write(chunk)) {
        request.pause();
        gunzip.once("drain", () => {
          if (!settled) request.resume();
        });
      }
    };
    const onWireEnd = () => (gunzip ? gunzip.end() : finish());
    const onClose = () => {
      // Closed before the whole body came: the client is gone or timed out (the server answered 408).
      if (settled || request.complete) return;
      stopReading();
      resolve({ ok: false, reason: "aborted", closeConnection: true });
    };

    if (gunzip) {
      gunzip.on("data", onDecoded);
      gunzip.on("end", finish);
      gunzip.on("error", () => refuse("bad_encoding"));
    }
    request.on("data", onWire);
    request.on("end", onWireEnd);
    request.on("close", onClose);
  });
}

/**
 * Reads and discards the rest of a refused body, raw, up to `budget` bytes.
 * Within it the client gets the answer on a connection it can keep; past it
 * the connection is to be closed after the answer, since a client sending
 * more than that is not one the answer is worth more reading for.
 */
function refuseAndDrain(
  request: IncomingMessage,
  reason: "too_large" | "wire_too_large" | "bad_encoding",
  budget: number,
): Promise<BodyRead> {
  return new Promise((resolve) => {
    let drained = 0;
    const done = (closeConnection: boolean) => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("close", onClose);
      if (closeConnection) request.pause();
      resolve({ ok: false, reason, closeConnection });
    };
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > budget) done(true);
    };
    const onEnd = () => done(false);
    const onClose = () => done(!request.complete);
    if (request.readableEnded) return done(false);
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("close", onClose);
    request.resume();
  });
}

/** A body readBody accepted, as text: one leading byte order mark dropped, as JSON.parse would refuse it. */
export function bodyText(buffer: Buffer): string {
  const text = buffer.toString("utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
