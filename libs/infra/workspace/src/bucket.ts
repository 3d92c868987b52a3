import type { JetStreamClient } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { ensureBucketReplicas, type BusNames } from "@switchyard/bus";
import { kvStream } from "@switchyard/platform";

/** Opens the workspace configuration bucket, creating it on first use. */
export async function openConfigBucket(js: JetStreamClient, names: BusNames, replicas: number): Promise<KV> {
  // create() is idempotent for an existing bucket with the same settings; it keeps an existing bucket's replicas.
  const kv = await new Kvm(js).create(names.configBucket, { history: 5, replicas });
  await ensureBucketReplicas(await js.jetstreamManager(), kvStream(names.configBucket), replicas);
  return kv;
}

/** Whether a KV write failed because the value is larger than the NATS server's max payload. */
export function isMaxPayloadError(error: unknown): boolean {
  let current = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    if (current.message.includes("max_payload")) return true;
    current = current.cause;
  }
  return false;
}
