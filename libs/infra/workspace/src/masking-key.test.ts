import { jetstream } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames, type BusNames } from "@switchyard/bus";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openConfigBucket } from "./bucket.js";
import { loadMasker, MASKING_KEY_KV_KEY } from "./masking-key.js";

let nats: NatsServer;
let names: BusNames;
const connections: NatsConnection[] = [];

/** The configuration bucket over a connection of its own, as each replica has. */
async function replicaBucket(): Promise<KV> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  return openConfigBucket(jetstream(nc), names, 1);
}

beforeEach(async () => {
  nats = await NatsServer.start();
  names = busNames(uniqueNamespace());
});
afterEach(async () => {
  for (const nc of connections.splice(0)) await nc.close();
  await nats.dispose();
});

describe("the masking key", () => {
  it("is made once: replicas starting together all get the one key stored", async () => {
    const buckets = await Promise.all(Array.from({ length: 6 }, () => replicaBucket()));
    const maskers = await Promise.all(buckets.map((kv) => loadMasker(kv)));
    const masks = new Set(maskers.map((masker) => masker.maskValue("Bearer short")));
    expect(masks.size).toBe(1);
    const stored = JSON.parse((await buckets[0]!.get(MASKING_KEY_KV_KEY))!.string()) as { hmacSha256Key: string };
    expect(stored.hmacSha256Key).toMatch(/^[0-9a-f]{64}$/);
    // One write between them: the others' create() found it there.
    let writes = 0;
    for await (const entry of await buckets[0]!.history({ key: MASKING_KEY_KV_KEY })) if (entry.operation === "PUT") writes++;
    expect(writes).toBe(1);
  });

  it("survives a restart: a later replica reads the stored key", async () => {
    const first = await loadMasker(await replicaBucket());
    const later = await loadMasker(await replicaBucket());
    expect(later.maskValue("tok-1")).toBe(first.maskValue("tok-1"));
  });

  it("refuses a stored key that is not 32 bytes of hex, naming the key and the rule", async () => {
    const kv = await replicaBucket();
    await kv.put(MASKING_KEY_KV_KEY, JSON.stringify({ hmacSha256Key: "abc" }));
    await expect(loadMasker(kv)).rejects.toThrow(
      'masking.key in the configuration bucket: must be {"hmacSha256Key": "<64 lower-case hex digits>"}; delete it to have a new key made',
    );
  });
});
