import { jetstream } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
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
/**
 * A commit's KV write that gets no answer, as over a connection that drops at
 * that moment: either after the server applied it or before.
 */
type KvFault = "answer lost after the update" | "no answer, no update";
let openStore: (options?: { kvFault?: KvFault }) => Promise<StateStore>;

beforeEach(async () => {
  nats = await NatsServer.start();
  nc = await connect({ servers: nats.url });
  const namespace = uniqueNamespace();
  openStore = async (options = {}) => {
    const js = jetstream(nc);
    const kv = await new Kvm(js).create(`${namespace}_state`, { history: 1 });
    const store = await new Objm(js).create(`${namespace}_members`);
    return new StateStore(options.kvFault ? withFault(kv, options.kvFault) : kv, store, new CommittedStateCache(1024 * 1024));
  };
  objects = await new Objm(jetstream(nc)).create(`${namespace}_members`);
});
afterEach(async () => {
  await nc.close();
  await nats.dispose();
});

const members = (text: string) => Buffer.from(text);

/** The real KV, except that create and update end without an answer, as `fault` says. */
function withFault(kv: KV, fault: KvFault): KV {
  return new Proxy(kv, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== "create" && property !== "update") return value.bind(target);
      return async (...args: unknown[]) => {
        if (fault === "answer lost after the update") await (value as (...a: unknown[]) => Promise<number>).apply(target, args);
        throw new Error("connection lost");
      };
    },
  });
}

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

  it("lets a repeat of the same sync, committed at the same time, lose without removing the winner's state", async () => {
    // A client that timed out and retried on another instance: one sync id, two attempts from one state.
    const storeA = await openStore();
    const storeB = await openStore();
    const fromA = await storeA.load("audience", "crm", "vip");
    const fromB = await storeB.load("audience", "crm", "vip");
    const objectA = await commitSync(storeA, fromA, "sync-1", members("attempt a"));
    const objectB = await storeB.stage("audience", "crm", "vip", "sync-1", members("attempt b"));
    expect(objectB).not.toBe(objectA);
    expect(
      await refusal(storeB.commit("audience", "crm", "vip", fromB, "sync-1", { object: objectB, blob: members("attempt b"), total: 1 })),
    ).toBe("FAILED_PRECONDITION");
    expect(await objectExists(objectA)).toBe(true);
    expect((await (await openStore()).load("audience", "crm", "vip")).blob?.toString()).toBe("attempt a");
  });

  it("takes a commit whose answer was lost as done when the record points at the new object", async () => {
    const store = await openStore({ kvFault: "answer lost after the update" });
    const blob = members("applied");
    const object = await commitSync(store, await store.load("audience", "crm", "vip"), "sync-1", blob);
    const loaded = await store.load("audience", "crm", "vip");
    expect(loaded.meta?.object).toBe(object);
    expect(loaded.blob).toBe(blob); // remembered as committed
  });

  it("keeps the staged object and answers UNAVAILABLE when a commit gets no answer and did not happen", async () => {
    const store = await openStore({ kvFault: "no answer, no update" });
    const previous = await store.load("audience", "crm", "vip");
    const object = await store.stage("audience", "crm", "vip", "sync-1", members("staged"));
    expect(await refusal(store.commit("audience", "crm", "vip", previous, "sync-1", { object, blob: members("staged"), total: 1 }))).toBe(
      "UNAVAILABLE",
    );
    // The connection works, so a removal would have succeeded: the object stays because it might become current.
    expect(await objectExists(object)).toBe(true);
    expect((await store.load("audience", "crm", "vip")).meta).toBeUndefined();
  });
});
