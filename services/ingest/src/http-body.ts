import type { IncomingMessage } from "node:http";
import { createGunzip } from "node:zlib";
import type { Readable } from "node:stream";

export type BodyRead = { ok: true; text: string; bytes: number } | { ok: false; reason: "too_large" | "bad_encoding"; bytes: number };

/**
 * Reads a request body (gzip-encoded or plain) up to `limit` bytes after
 * decoding. Past the limit the rest is read and discarded, so the client can
 * still receive the answer on the same connection.
 */
export async function readBody(request: IncomingMessage, limit: number): Promise<BodyRead> {
  const encoding = (request.headers["content-encoding"] ?? "identity").toLowerCase();
  let stream: Readable = request;
  if (encoding === "gzip") stream = request.pipe(createGunzip());
  else if (encoding !== "identity") {
    request.resume();
    return { ok: false, reason: "bad_encoding", bytes: 0 };
  }

  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      bytes += buffer.length;
      if (bytes <= limit) chunks.push(buffer);
    }
  } catch {
    // The gunzip stream failed and stopped reading the request: drain the rest, or the client
    // waits forever to finish sending its body, and never reads the answer.
    request.unpipe();
    request.resume();
    return { ok: false, reason: "bad_encoding", bytes };
  }
  if (bytes > limit) return { ok: false, reason: "too_large", bytes };
  return { ok: true, text: Buffer.concat(chunks).toString("utf8"), bytes };
}
