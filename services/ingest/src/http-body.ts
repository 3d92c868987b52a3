import { isUtf8Bytes } from "@switchyard/calls";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { createGunzip, type Gunzip } from "node:zlib";

/** The bounds of one request body, in bytes. */
export interface BodyLimits {
  /** The body after decoding (after gunzip, or as sent without Content-Encoding). */
  decoded: number;
  /** The body as sent: bounds a gzip body that decodes small but takes long to send and inflate. */
  wire: number;
  /**
   * Raw bytes of a refused body read on and thrown away (never inflated) before
   * the answer, so a client that is still sending finishes and reads the answer
   * on a connection it can keep. A body whose rest is over it (or of unknown
   * length) is answered at once, with `Connection: close` (see closeAfterAnswer).
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
      /** Whether the rest of the body was left unread (over the drain bound): answer at once, then closeAfterAnswer. */
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
  if (encoding !== "gzip" && encoding !== "identity") return refuseAndDrain(request, "bad_encoding", limits.drain, 0);

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
      resolve(refuseAndDrain(request, reason, limits.drain, wireBytes));
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
 * Reads and discards the rest of a refused body, raw, when its Content-Length
 * says it is within `budget` bytes: the client then gets the answer on a
 * connection it can keep. A longer rest, or one of unknown length (chunked),
 * is not waited for: the answer goes at once and the connection is closed
 * after it (closeAfterAnswer), since a client sending that much is not one
 * the answer is worth waiting for.
 */
function refuseAndDrain(
  request: IncomingMessage,
  reason: "too_large" | "wire_too_large" | "bad_encoding",
  budget: number,
  alreadyRead: number,
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
    const declared = request.headers["content-length"];
    if (declared === undefined || Number(declared) - alreadyRead > budget) return done(true);
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("close", onClose);
    request.resume();
  });
}

/** How long a connection answered with `Connection: close` is read on for a client still sending. */
const LINGER_MS = 5_000;

/**
 * Closes the connection of a request answered before its body was read,
 * without resetting it under a client still sending. Node destroys the socket
 * once a `Connection: close` answer is written, and data arriving after that
 * makes the kernel answer with a reset: the client sees EPIPE or ECONNRESET,
 * may never read the answer, and Segment SDKs retry a reset, so the same body
 * would come back forever. Instead the answer is followed by a FIN, and what
 * the client still sends is read and thrown away (never kept, never inflated)
 * until it closes its side or `lingerMs` passes (the server's request timeout
 * also still applies). Call before the answer is written.
 */
export function closeAfterAnswer(request: IncomingMessage, lingerMs = LINGER_MS): void {
  const socket: Socket = request.socket;
  socket.destroySoon = function lingeringClose(this: Socket) {
    // FIN once the answer is flushed; the read side stays open.
    if (this.writable) this.end();
    const closeOnceWritten = () => (this.writableFinished ? this.destroy() : this.once("finish", () => this.destroy()));
    if (request.readableEnded) return closeOnceWritten();
    const timer = setTimeout(() => this.destroy(), lingerMs);
    timer.unref();
    this.once("close", () => clearTimeout(timer));
    // The client closed its side, or sent everything: nothing left to read that would cause a reset.
    this.once("end", () => this.destroy());
    request.once("end", closeOnceWritten);
    // A request in flowing mode without a data listener drops what it reads.
    request.resume();
  };
}

/** A body readBody accepted, as text: one leading byte order mark dropped, as JSON.parse would refuse it. */
export function bodyText(buffer: Buffer): string {
  const text = buffer.toString("utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
