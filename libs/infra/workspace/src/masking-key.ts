import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { ConfigError } from "@switchyard/platform";
import { Masker } from "./masking.js";

/** The configuration bucket key holding the masking key (outside the source/destination/connection layout). */
export const MASKING_KEY_KV_KEY = "masking.key";

const KEY_BYTES = 32;

/**
 * The deployment's Masker, its key read from the configuration bucket, or made (32 random bytes)
 * and stored there on first use. Stored with create(), so replicas starting together store one key
 * between them and all use it: a mask read from one replica is matched by every other, and after
 * restarts. A key deleted from the bucket is replaced by a new one: masks read before no longer
 * match (a write sending one is refused, nothing is lost).
 */
export async function loadMasker(kv: KV): Promise<Masker> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const entry = await kv.get(MASKING_KEY_KV_KEY);
    if (entry && entry.operation === "PUT") return new Masker(parseKeyRecord(entry.string()));
    try {
      await kv.create(MASKING_KEY_KV_KEY, JSON.stringify({ hmacSha256Key: randomBytes(KEY_BYTES).toString("hex") }));
    } catch (error) {
      // Another replica stored one first: read it on the next round.
      lastError = error;
    }
  }
  throw new Error(`${MASKING_KEY_KV_KEY}: neither read nor stored in the configuration bucket`, { cause: lastError });
}

function parseKeyRecord(text: string): Buffer {
  let hex: unknown;
  try {
    hex = (JSON.parse(text) as { hmacSha256Key?: unknown }).hmacSha256Key;
  } catch {
    hex = undefined;
  }
  if (typeof hex !== "string" || !new RegExp(`^[0-9a-f]{${2 * KEY_BYTES}}$`).test(hex)) {
    throw new ConfigError(
      `${MASKING_KEY_KV_KEY} in the configuration bucket: must be {"hmacSha256Key": "<${2 * KEY_BYTES} lower-case hex digits>"}; delete it to have a new key made`,
    );
  }
  return Buffer.from(hex, "hex");
}
