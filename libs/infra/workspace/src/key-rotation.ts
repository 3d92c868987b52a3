import type { SourceRecord } from "./schema.js";

/** The longest grace period a rotation may give the previous keys (30 days). */
export const MAX_ROTATION_GRACE_SECONDS = 30 * 24 * 3600;

/**
 * A source record after a write key rotation: `newKeyHash` becomes the only
 * current key; the keys that were current keep working until `nowMs + graceMs`
 * (a grace of 0 drops them at once); keys retiring from an earlier rotation
 * keep their own end unless the new one comes sooner (rotating again with a
 * shorter grace is how an operator cuts a leaked key off early). Expired keys
 * are dropped. Pure, so the rules are unit-tested without a bus.
 */
export function rotateWriteKey(record: SourceRecord, newKeyHash: string, graceMs: number, nowMs: number): SourceRecord {
  const end = nowMs + graceMs;
  const retiring = new Map<string, number>();
  for (const key of record.retiringWriteKeys ?? []) retiring.set(key.hash, Math.min(Date.parse(key.expiresAt), end));
  for (const hash of record.writeKeyHashes) retiring.set(hash, end);
  retiring.delete(newKeyHash);
  const kept = [...retiring].filter(([, expiresAtMs]) => expiresAtMs > nowMs);
  const { retiringWriteKeys: _previous, ...rest } = record;
  return {
    ...rest,
    writeKeyHashes: [newKeyHash],
    ...(kept.length > 0
      ? { retiringWriteKeys: kept.map(([hash, expiresAtMs]) => ({ hash, expiresAt: new Date(expiresAtMs).toISOString() })) }
      : {}),
  };
}

/** The retiring keys that still work at `nowMs`, and when the last of them stops. */
export function liveRetiringKeys(record: SourceRecord, nowMs: number): { count: number; lastExpiresAtMs: number | undefined } {
  const live = (record.retiringWriteKeys ?? []).map((key) => Date.parse(key.expiresAt)).filter((expiresAtMs) => expiresAtMs > nowMs);
  return { count: live.length, lastExpiresAtMs: live.length > 0 ? Math.max(...live) : undefined };
}
