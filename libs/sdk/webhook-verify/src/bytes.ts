/** A request body as the receiver read it: the raw bytes, or a string holding them as UTF-8. */
export type RawBody = Uint8Array | ArrayBuffer | string;

/**
 * The exact bytes to sign or verify. A string is taken as UTF-8; pass the raw
 * bytes whenever you can, because a parsed and re-serialised JSON body is not
 * the body that was signed (key order, spacing and number formats change).
 */
export function bodyBytes(body: RawBody): Uint8Array {
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof Uint8Array) return body;
  return new Uint8Array(body);
}
