import type { JetStreamManager } from "@nats-io/jetstream";

/**
 * Brings the stream behind a KV bucket (`KV_<bucket>`) or an object store (`OBJ_<bucket>`) to
 * `replicas` (SWITCHYARD_STREAM_REPLICAS), as the services' streams are brought to it at every
 * start-up. Creating a bucket that exists already leaves its replica count as it was, so every
 * service calls this right after opening each bucket it uses. Only the replica count changes,
 * and only when it differs: every other setting stays as the stream has it. Replicas starting
 * together may each update it; the updates agree.
 */
export async function ensureBucketReplicas(jsm: JetStreamManager, stream: string, replicas: number): Promise<void> {
  const info = await jsm.streams.info(stream);
  if (info.config.num_replicas === replicas) return;
  // update() sends the stream's current settings with these over them.
  await jsm.streams.update(stream, { num_replicas: replicas });
}
