import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
import { isServiceError } from "@switchyard/platform";
import { NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CommittedStateCache } from "../src/committed-state-cache.js";
import { StateStore, type LoadedState } from "../src/state-store.js";

let nats: NatsServer;
let nc: NatsConnection;
let objects: ObjectStore;
let openStore: (connection?: NatsConnection) => Promise<StateStore>;

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
  const namespace = uniqueNamespace();
  openStore = async (connection = nc) => {
    const js = jetstream(connection);
    const kv = await new Kvm(js).create(`${namespace}_state`, { history: 1 });
    const store = await new Objm(js).create(`${namespace}_members`);
    return new StateStore(kv, store, new CommittedStateCache(1024 * 1024));
  };
  objects = await new Objm(jetstream(nc)).create(`${namespace}_members`);
});
afterEach(async () => {
  await nc.close();
  await nats.dispose();
});

const members = (text: string) => Buffer.from(text);

async function commitSync(store: StateStore, previous: LoadedState, syncId: string, blob: Buffer): Promise<string> {
  const object = await store.stage("audience", "crm", "vip", syncId, blob);
  await store.commit("audience", "crm", "vip", previous, syncId, { object, blob, total: 1 });
  return object;
}

/** Present and not deleted (the object store keeps a deleted object's info, marked deleted). */
async function objectExists(name: string): Promise<boolean> {
  const info = await objects.info(name);
  return info !== null && !info.deleted;
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isServiceError(error)) throw new Error(`expected a ServiceError, got ${String(error)}`);
  return error.code;
}

describe("audience state store", () => {
  it("serves the state it committed from memory, and another store reads the same bytes back", async () => {
    const store = await openStore();
    const blob = members("state one");
    await commitSync(store, await store.load("audience", "crm", "vip"), "sync-1", blob);
    const loaded = await store.load("audience", "crm", "vip");
    expect(loaded.blob).toBe(blob); // the committed buffer itself: nothing was read
    const elsewhere = await (await openStore()).load("audience", "crm", "vip");
    expect(elsewhere.blob).not.toBe(blob);
    expect(elsewhere.blob?.equals(blob)).toBe(true);
  });

  it("lets one of two syncs from the same state win, and removes the loser's object", async () => {
    const storeA = await openStore();
    const storeB = await openStore();
    await commitSync(storeA, await storeA.load("audience", "crm", "vip"), "sync-0", members("base"));
    const fromA = await storeA.load("audience", "crm", "vip");
    const fromB = await storeB.load("audience", "crm", "vip");
    await commitSync(storeA, fromA, "sync-a", members("a wins"));
    const object = await storeB.stage("audience", "crm", "vip", "sync-b", members("b loses"));
    expect(await refusal(storeB.commit("audience", "crm", "vip", fromB, "sync-b", { object, blob: members("b loses"), total: 1 }))).toBe(
      "FAILED_PRECONDITION",
    );
    expect(await objectExists(object)).toBe(false);
    expect((await storeB.load("audience", "crm", "vip")).blob?.toString()).toBe("a wins");
  });

  it("keeps the staged object when the commit gets no answer, since it may have become current", async () => {
    const lost = await connect({ servers: nats.url });
    const store = await openStore(lost);
    const previous = await store.load("audience", "crm", "vip");
    const object = await store.stage("audience", "crm", "vip", "sync-1", members("staged"));
    await lost.close();
    expect(await refusal(store.commit("audience", "crm", "vip", previous, "sync-1", { object, blob: members("staged"), total: 1 }))).toBe(
      "UNAVAILABLE",
    );
    expect(await objectExists(object)).toBe(true);
  });
});
