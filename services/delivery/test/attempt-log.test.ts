import { status } from "@grpc/grpc-js";
import { jetstreamManager } from "@nats-io/jetstream";
import type { DeliveryAttempt, ListDeliveryAttemptsRequest } from "@switchyard/contracts";
import { waitFor } from "@switchyard/testkit";
import { loadMasker } from "@switchyard/workspace";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, FAST_RETRY_ENV, trackPayload, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

const scope = deliveryPerTest();
const SECRET = "whsec-attempt-log-test-secret";
const TOKEN = "tok-attempt-log-s3cr3t";
const QUERY_TOKEN = "q-attempt-log-s3cr3t";
/** Small batches and a short linger, so a few attempts make several delivered-log messages. */
const LOG_ENV = { ...FAST_RETRY_ENV, DELIVERY_ATTEMPT_LOG_BATCH: "3", DELIVERY_ATTEMPT_LOG_LINGER_MS: "50" };

function workspace(destinations: Record<string, { url: string; headers?: Record<string, string>; sharedSecret?: string }>): unknown {
  return {
    sources: [{ id: "web", writeKeys: ["wk_attempt_log_test_01"] }],
    destinations: Object.entries(destinations).map(([id, d]) => ({
      id,
      settings: { webhooks: [{ url: d.url, headers: d.headers ?? {} }], ...(d.sharedSecret ? { sharedSecret: d.sharedSecret } : {}) },
    })),
    connections: Object.keys(destinations).map((destinationId) => ({ sourceId: "web", destinationId })),
  };
}

async function list(f: DeliveryFixture, request: Partial<ListDeliveryAttemptsRequest> = {}): Promise<DeliveryAttempt[]> {
  return (await f.admin.listDeliveryAttempts({ limit: 1000, ...request })).attempts;
}

/** Every page of a listing, followed through next_page_token. */
async function allPages(
  f: DeliveryFixture,
  request: Partial<ListDeliveryAttemptsRequest>,
): Promise<{ attempts: DeliveryAttempt[]; pages: number }> {
  const attempts: DeliveryAttempt[] = [];
  let pageToken = "";
  let pages = 0;
  do {
    const page = await f.admin.listDeliveryAttempts({ ...request, pageToken });
    attempts.push(...page.attempts);
    pageToken = page.nextPageToken;
    pages++;
    expect(pages).toBeLessThan(100);
  } while (pageToken);
  return { attempts, pages };
}

async function refusal(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (error) {
    const { code, details } = error as { code: number; details: string };
    return { code, details };
  }
  throw new Error("the call was not refused");
}

/**
 * Each destination's attempts come newest first. (Across destinations the order can mix within
 * the time attempts are gathered for: each destination's are indexed as a batch.)
 */
function expectNewestFirst(attempts: DeliveryAttempt[]): void {
  for (const destinationId of new Set(attempts.map((a) => a.destinationId))) {
    const times = attempts.filter((a) => a.destinationId === destinationId).map((a) => a.at!.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  }
}

describe("the attempt log", () => {
  it("records delivered, retried and dead-lettered attempts, newest first, each with its exchange (credentials masked)", async () => {
    const bigBody = Buffer.alloc(10_000, "x");
    const hook = await scope.receiver((_request, index) =>
      index === 0 ? { status: 500, body: "busy" } : { status: 200, headers: { "X-Receipt": "r-1" }, body: bigBody },
    );
    const refusing = await scope.receiver(() => ({ status: 400, body: "bad" }));
    const f = await scope.start({
      workspace: workspace({
        hook: { url: hook.url(`/in?token=${QUERY_TOKEN}`), headers: { "X-Receiver-Token": TOKEN }, sharedSecret: SECRET },
        refusing: { url: refusing.url("/in") },
      }),
      env: LOG_ENV,
    });
    await f.publishCalls("web", [busCall("m-1", trackPayload())]);

    const logged = await waitFor("four entries in the attempt log", async () => {
      const attempts = await list(f);
      return attempts.length >= 4 ? attempts : undefined;
    });
    await f.settled();
    expect(logged).toHaveLength(4);
    expectNewestFirst(logged);
    const of = (destinationId: string) =>
      logged.filter((a) => a.destinationId === destinationId).map((a) => [a.attempt, a.outcome, a.status]);
    expect(of("hook")).toEqual([
      [2, "delivered", 200],
      [1, "retryable", 500],
    ]);
    expect(of("refusing")).toEqual([
      [1, "dead_lettered", 400],
      [1, "permanent", 400],
    ]);
    // Pages leave the exchange out; every entry has an id to ask for it.
    expect(logged.every((a) => a.exchange === undefined && a.attemptId !== "")).toBe(true);
    expect(new Set(logged.map((a) => a.attemptId)).size).toBe(4);

    const delivered = logged.find((a) => a.outcome === "delivered")!;
    const detail = (await f.admin.getDeliveryAttempt({ attemptId: delivered.attemptId })).attempt!;
    const masker = await loadMasker(f.configKv);
    const maskedUrl = hook.url(`/in?token=${masker.maskValue(QUERY_TOKEN)}`);
    expect(detail).toMatchObject({ attemptId: delivered.attemptId, messageId: "m-1", sourceId: "web", url: maskedUrl, status: 200 });
    const exchange = detail.exchange!;
    expect(exchange.method).toBe("POST");
    expect(exchange.url).toBe(maskedUrl);
    const sent = hook.requests[1]!;
    const requestHeader = (name: string) => exchange.requestHeaders.find((h) => h.name.toLowerCase() === name)?.value;
    expect(requestHeader("x-receiver-token")).toBe(masker.maskValue(TOKEN));
    expect(requestHeader("x-signature")).toBe(sent.headers["x-signature"]);
    expect(requestHeader("content-type")).toBe("application/json");
    expect(Buffer.from(exchange.requestBody).equals(sent.raw)).toBe(true);
    expect(exchange.responseHeaders.find((h) => h.name.toLowerCase() === "x-receipt")?.value).toBe("r-1");
    expect(exchange.responseBody).toHaveLength(4096);
    expect(Buffer.from(exchange.responseBody).equals(bigBody.subarray(0, 4096))).toBe(true);
    expect(exchange.responseBodyTruncated).toBe(true);
    // The secrets were sent, and are nowhere in what the log shows.
    expect(sent.headers["x-receiver-token"]).toBe(TOKEN);
    expect(JSON.stringify({ logged, detail })).not.toContain(TOKEN);
    expect(JSON.stringify({ logged, detail })).not.toContain(QUERY_TOKEN);

    const failed = logged.find((a) => a.outcome === "retryable")!;
    const failedExchange = (await f.admin.getDeliveryAttempt({ attemptId: failed.attemptId })).attempt!.exchange!;
    expect(Buffer.from(failedExchange.responseBody).toString()).toBe("busy");
    expect(failedExchange.responseBodyTruncated).toBe(false);
    const dead = logged.find((a) => a.outcome === "dead_lettered")!;
    expect((await f.admin.getDeliveryAttempt({ attemptId: dead.attemptId })).attempt).toMatchObject({
      outcome: "dead_lettered",
      exchange: { method: "POST", url: refusing.url("/in") },
    });
  });

  it("pages through the log without gap or repeat, and filters by destination, call, outcome and time", async () => {
    const ok = await scope.receiver();
    const refusing = await scope.receiver(() => ({ status: 400 }));
    const f = await scope.start({
      workspace: workspace({ a: { url: ok.url("/a") }, b: { url: ok.url("/b") }, c: { url: refusing.url("/c") } }),
      env: LOG_ENV,
    });
    // Several batches, so the log spans several messages of both streams.
    for (let batch = 0; batch < 4; batch++) {
      await f.publishCalls(
        "web",
        [0, 1, 2].map((i) => busCall(`m-${batch * 3 + i}`, trackPayload())),
      );
    }
    // 12 calls: delivered to a and b (24), refused by c and dead-lettered (24).
    const everything = await waitFor("48 entries in the attempt log", async () => {
      const attempts = await list(f);
      return attempts.length >= 48 ? attempts : undefined;
    });
    await f.settled();
    expect(everything).toHaveLength(48);
    expectNewestFirst(everything);
    const ids = (attempts: DeliveryAttempt[]) => attempts.map((a) => a.attemptId);
    // Where a filter keeps entries of both streams, the merge may order them a little differently (see expectNewestFirst).
    const idSet = (attempts: DeliveryAttempt[]) => ids(attempts).sort();

    const paged = await allPages(f, { limit: 7 });
    expect(paged.pages).toBeGreaterThanOrEqual(7);
    expect(ids(paged.attempts)).toEqual(ids(everything));

    const b = await allPages(f, { destinationId: "b", limit: 5 });
    expect(ids(b.attempts)).toEqual(ids(everything.filter((a) => a.destinationId === "b")));
    expect(b.attempts).toHaveLength(12);

    const deadLettered = await allPages(f, { outcomes: ["dead_lettered"], limit: 5 });
    expect(ids(deadLettered.attempts)).toEqual(ids(everything.filter((a) => a.outcome === "dead_lettered")));
    expect(deadLettered.attempts).toHaveLength(12);

    // Pages of failure outcomes only read the failures themselves: their tokens are theirs.
    const { nextPageToken } = await f.admin.listDeliveryAttempts({ outcomes: ["dead_lettered"], limit: 1 });
    expect(await refusal(f.admin.listDeliveryAttempts({ pageToken: nextPageToken }))).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/^page_token: made for other outcomes/),
    });

    const deliveredOrPermanent = await allPages(f, { outcomes: ["delivered", "permanent"], limit: 10 });
    expect(idSet(deliveredOrPermanent.attempts)).toEqual(idSet(everything.filter((a) => a.outcome !== "dead_lettered")));

    const oneCall = await list(f, { messageId: "m-4" });
    expect(oneCall.map((a) => [a.destinationId, a.outcome]).sort()).toEqual([
      ["a", "delivered"],
      ["b", "delivered"],
      ["c", "dead_lettered"],
      ["c", "permanent"],
    ]);

    // A time range: from the 40th newest time up to (not including) the 10th.
    const times = everything.map((a) => a.at!.getTime()).sort((a, b) => b - a);
    const since = new Date(times[39]!);
    const before = new Date(times[9]!);
    const inRange = everything.filter((a) => a.at!.getTime() >= since.getTime() && a.at!.getTime() < before.getTime());
    const ranged = await allPages(f, { since, before, limit: 6 });
    expect(idSet(ranged.attempts)).toEqual(idSet(inRange));
    expect(idSet(await list(f, { since }))).toEqual(idSet(everything.filter((a) => a.at!.getTime() >= since.getTime())));
    // Before a time, for one destination: index messages stored just after `before` are skipped by
    // their Switchyard-First-At header, or read for their older attempts.
    for (const at of [everything[5]!.at!, everything[20]!.at!, everything[30]!.at!]) {
      const olderOfA = everything.filter((a) => a.destinationId === "a" && a.at!.getTime() < at.getTime());
      expect(ids((await allPages(f, { destinationId: "a", before: at, limit: 4 })).attempts)).toEqual(ids(olderOfA));
      expect(idSet((await allPages(f, { before: at, limit: 9 })).attempts)).toEqual(
        idSet(everything.filter((a) => a.at!.getTime() < at.getTime())),
      );
    }

    // Sparse: one destination's dead letters of one call.
    expect((await list(f, { destinationId: "c", messageId: "m-7", outcomes: ["dead_lettered"] })).map((a) => a.messageId)).toEqual(["m-7"]);

    // Every page's reads leave no consumer behind on the index (an idle one would stay minutes).
    const jsm = await jetstreamManager(f.nc);
    await waitFor("the pages' consumers to be deleted", async () => {
      const info = await jsm.streams.info(f.names.attemptIndexStream);
      return info.state.consumer_count === 0 || undefined;
    });
  });

  it("lists a destination's delivered and failed attempts of the same moment newest first", async () => {
    // One batch of calls, every other one refused: delivered attempts and failures of one
    // destination come within one linger of each other, and are indexed together.
    const mixed = await scope.receiver((request) => ({ status: Number(request.json.messageId.slice(2)) % 2 === 0 ? 200 : 400 }));
    const f = await scope.start({ workspace: workspace({ mixed: { url: mixed.url("/in") } }), env: LOG_ENV });
    await f.publishCalls(
      "web",
      Array.from({ length: 12 }, (_, i) => busCall(`m-${i}`, trackPayload())),
    );
    // 6 delivered, 6 refused and 6 dead letters.
    const logged = await f.admin.loggedAttempts({ destinationId: "mixed" }, 18);
    await f.settled();
    expect(logged).toHaveLength(18);
    expectNewestFirst(logged);
    expect(
      logged
        .filter((a) => a.outcome === "delivered")
        .map((a) => a.messageId)
        .sort(),
    ).toEqual(["m-0", "m-10", "m-2", "m-4", "m-6", "m-8"]);
  });

  it("pages before a time whose following stretch holds more index messages than one header fetch reads", async () => {
    const ok = await scope.receiver();
    // Index messages of 3 entries, and a long linger: a `before` page reads the headers of what is
    // stored up to 250 ms + 2 lingers (4.25 s) after `before`, longer than these 600 deliveries
    // usually take, so an early `before` makes it read most of the index.
    const f = await scope.start({
      workspace: workspace({ a: { url: ok.url("/a") } }),
      env: { ...LOG_ENV, DELIVERY_ATTEMPT_LOG_LINGER_MS: "2000" },
    });
    for (let batch = 0; batch < 4; batch++) {
      await f.publishCalls(
        "web",
        Array.from({ length: 150 }, (_, i) => busCall(`m-${batch * 150 + i}`, trackPayload())),
      );
    }
    const logged = await f.admin.loggedAttempts({ destinationId: "a" }, 600);
    await f.settled();
    const oldestFirst = [...logged].sort((x, y) => x.at!.getTime() - y.at!.getTime());
    const info = await (await jetstreamManager(f.nc)).streams.info(f.names.attemptIndexStream);
    // The header scan fetches 128 at a time: this stretch takes it two fetches at least.
    expect(info.state.messages).toBeGreaterThan(128);

    const ids = (attempts: DeliveryAttempt[]) => attempts.map((a) => a.attemptId).sort();
    for (const at of [oldestFirst[4]!.at!, oldestFirst[300]!.at!, oldestFirst[599]!.at!]) {
      const older = logged.filter((a) => a.at!.getTime() < at.getTime());
      const paged = await allPages(f, { destinationId: "a", before: at, limit: 100 });
      expect(ids(paged.attempts)).toEqual(ids(older));
      expectNewestFirst(paged.attempts);
      expect(ids((await allPages(f, { before: at, limit: 100 })).attempts)).toEqual(ids(older));
    }
  });

  it("refuses a bad page_token, outcome or attempt_id, naming the field, and answers NOT_FOUND for an attempt not in the log", async () => {
    const ok = await scope.receiver();
    const f = await scope.start({ workspace: workspace({ a: { url: ok.url("/a") } }), env: LOG_ENV });

    const badToken = await refusal(f.admin.listDeliveryAttempts({ pageToken: "not-a-token" }));
    expect(badToken).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringMatching(/^page_token: /) });
    const badOutcome = await refusal(f.admin.listDeliveryAttempts({ outcomes: ["delivered", "lost"] }));
    expect(badOutcome).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringMatching(/^outcomes: "lost"/) });
    const badId = await refusal(f.admin.getDeliveryAttempt({ attemptId: "seq-12" }));
    expect(badId).toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringMatching(/^attempt_id: /) });
    const gone = await refusal(f.admin.getDeliveryAttempt({ attemptId: "d.999999.0" }));
    expect(gone).toMatchObject({ code: status.NOT_FOUND, details: expect.stringMatching(/^attempt_id: /) });
    expect(await f.admin.listDeliveryAttempts({})).toEqual({ attempts: [], nextPageToken: "" });
  });
});
