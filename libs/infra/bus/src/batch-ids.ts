import { createHash, randomUUID } from "node:crypto";

/**
 * The id a batch is de-duplicated by. A client's id is kept; otherwise, when
 * every accepted call carries the client's own messageId, a digest of them
 * makes a re-sent batch recognisable (Segment SDKs set messageIds but no batch
 * id). Only the accepted calls count: a client that fixes a refused call and
 * sends the batch again sends different calls, which must be stored, not taken
 * for a repeat of the first attempt.
 */
export function resolveBatchId(clientBatchId: string | undefined, acceptedClientMessageIds: (string | undefined)[]): string {
  if (clientBatchId) return clientBatchId;
  if (acceptedClientMessageIds.length > 0 && acceptedClientMessageIds.every((id) => id !== undefined && id !== "")) {
    // Length-prefixed, so no two lists of ids digest the same text; hashed in one update (the same digest as one per id).
    let text = "";
    for (const id of acceptedClientMessageIds) text += `${Buffer.byteLength(id!)}:${id}`;
    return `d-${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
  }
  return randomUUID();
}

/**
 * A UUID-shaped id (version digit 5) derived from its parts, joined by line
 * breaks and hashed with SHA-256, so the same work always yields the same id:
 * a messageId ingest gives a call that came without one (source, batch id,
 * position), or the ids audience-sync gives the calls and batches it emits.
 * Ids already stored and delivered depend on it: the hashing must not change.
 */
export function deterministicId(...parts: string[]): string {
  const hex = createHash("sha256").update(parts.join("\n")).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
