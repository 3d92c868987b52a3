import { createHash, randomUUID } from "node:crypto";

/**
 * The id a batch is de-duplicated by. A client's id is kept; otherwise, when
 * every call carries the client's own messageId, a digest of them makes a
 * re-sent batch recognisable (Segment SDKs set messageIds but no batch id).
 */
export function resolveBatchId(clientBatchId: string | undefined, clientMessageIds: (string | undefined)[]): string {
  if (clientBatchId) return clientBatchId;
  if (clientMessageIds.length > 0 && clientMessageIds.every((id) => id !== undefined && id !== "")) {
    const digest = createHash("sha256");
    for (const id of clientMessageIds) digest.update(`${id}\n`);
    return `d-${digest.digest("hex").slice(0, 32)}`;
  }
  return randomUUID();
}

/**
 * A messageId for a call that came without one. Derived from the batch id and
 * position, so a re-sent batch gets the same ids as the first attempt.
 */
export function derivedMessageId(sourceId: string, batchId: string, index: number): string {
  const hex = createHash("sha256").update(`${sourceId}\n${batchId}\n${index}`).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
