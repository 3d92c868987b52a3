import { credentials, Metadata } from "@grpc/grpc-js";
import { DeliveryServiceClient, ListDeadLettersRequest, type DeadLetterEntry } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import { NatsServer, WebhookReceiver, waitFor, type ReceivedRequest } from "@switchyard/testkit";
import { verifyStandardWebhook } from "@switchyard/webhook-verify";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, Pipeline, WRITE_KEY } from "./support/pipeline.js";
import { profile, scenarioSeed } from "./support/profile.js";

/**
 * Every call reaches an end state, whatever its content: random ids, keys and
 * values (control characters, NUL, emoji, lone surrogates, `__proto__`, empty
 * and huge strings) go through real ingest and delivery processes to a 200, a
 * Standard-Webhooks 200, a 400 and a 500 receiver. Each call is either refused
 * at ingest, naming the field and the rule, or delivered exactly as sent where
 * the receiver takes it, dead-lettered at once where it refuses it, and
 * dead-lettered at its window's end where it keeps failing, with no more
 * requests than the retry schedule allows. Nothing goes to the poison stream.
 */

const seed = scenarioSeed();
process.stdout.write(`end states: seed ${seed}\n`);
/** A short window and schedule, so the failing receiver's calls reach their end within the test. */
const WINDOW_MS = 4_000;
const BASE_DELAY_MS = 200;
const MAX_DELAY_MS = 800;
const SIGNING_SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const BATCHES = profile.name === "long" ? 40 : 8;
const CALLS_PER_BATCH = 25;

/**
 * The most requests one call can cost a receiver that always fails: the first
 * round, then one per retry, each at least half its step after the last
 * (equal jitter), none after the window's end, plus one at the end.
 */
function maxRequests(): number {
  let elapsed = 0;
  let requests = 1;
  for (let attempt = 1; elapsed < WINDOW_MS; attempt++) {
    elapsed += Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1)) / 2;
    requests++;
  }
  return requests + 1;
}

const nasty = fc.constantFrom(
  "\n",
  "\r\n",
  "\0",
  "\x7f",
  "\u0085",
  "\t",
  " ",
  "😀",
  "\ud800",
  "\udfff",
  "__proto__",
  "h_",
  ":",
  ".",
  "*",
  ">",
  "",
);
const text = (maxLength: number) =>
  fc.oneof(
    { arbitrary: fc.string({ maxLength }), weight: 3 },
    {
      arbitrary: fc
        .array(fc.oneof(nasty, fc.string({ maxLength: 4 })), { maxLength: 8 })
        .map((parts) => parts.join("").slice(0, maxLength)),
      weight: 2,
    },
    { arbitrary: fc.string({ unit: "binary", maxLength }), weight: 1 },
  );
const key = fc.oneof(fc.constantFrom("__proto__", "constructor", "prototype", "toString", "", "a.b", "😀"), text(12));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text(40),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.array(fc.tuple(key, tie("value")), { maxLength: 3 }).map(entries),
  ),
})).value;
const properties = fc.array(fc.tuple(key, value), { maxLength: 6 }).map(entries);
const messageIdPart = fc.oneof(
  { arbitrary: fc.uuid(), weight: 3 },
  { arbitrary: text(60), weight: 6 },
  { arbitrary: fc.constant("x".repeat(140)), weight: 1 },
  { arbitrary: fc.constant(null), weight: 1 },
);
/** Mostly a name, sometimes empty (refused as not_empty). */
const eventName = fc.oneof({ arbitrary: fc.constant(""), weight: 1 }, { arbitrary: text(30).filter((name) => name !== ""), weight: 8 });

/** An object with these entries as own data properties, `__proto__` included. */
function entries(pairs: [string, unknown][]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [name, entry] of pairs)
    Object.defineProperty(object, name, { value: entry, enumerable: true, writable: true, configurable: true });
  return object;
}

interface SentCall {
  messageId: string;
  json: string;
}

let nats: NatsServer;
let pipeline: Pipeline;
let receivers: Record<"ok" | "signed" | "refused" | "failing", WebhookReceiver>;

beforeAll(async () => {
  nats = await NatsServer.start();
  const started = await Promise.all([WebhookReceiver.start(), WebhookReceiver.start(), WebhookReceiver.start(), WebhookReceiver.start()]);
  receivers = { ok: started[0]!, signed: started[1]!, refused: started[2]!, failing: started[3]! };
  receivers.refused.respond(() => ({ status: 400 }));
  receivers.failing.respond(() => ({ status: 500 }));
  const destinations = [
    { id: "ok", settings: { webhooks: [{ url: receivers.ok.url() }] } },
    { id: "signed", settings: { webhooks: [{ url: receivers.signed.url() }], standardWebhooks: { signingSecret: SIGNING_SECRET } } },
    { id: "refused", settings: { webhooks: [{ url: receivers.refused.url() }] } },
    { id: "failing", settings: { webhooks: [{ url: receivers.failing.url() }] } },
  ];
  pipeline = await Pipeline.start({
    natsUrl: nats.url,
    workspace: {
      sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
      destinations,
      connections: destinations.map((destination) => ({ sourceId: "web", destinationId: destination.id })),
    },
    services: ["ingest", "delivery"],
    env: {
      delivery: {
        DELIVERY_RETRY_WINDOW_MS: String(WINDOW_MS),
        DELIVERY_RETRY_BASE_DELAY_MS: String(BASE_DELAY_MS),
        DELIVERY_RETRY_MAX_DELAY_MS: String(MAX_DELAY_MS),
      },
    },
  });
}, 120_000);

afterAll(async () => {
  await pipeline?.dispose();
  await Promise.all(Object.values(receivers ?? {}).map((receiver) => receiver.close()));
  await nats?.dispose();
});

async function deadLetters(destinationId: string): Promise<DeadLetterEntry[]> {
  const client = new DeliveryServiceClient(pipeline.deliveryTarget, credentials.createInsecure());
  const metadata = new Metadata();
  metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
  try {
    return await new Promise((resolve, reject) =>
      client.listDeadLetters(ListDeadLettersRequest.fromPartial({ destinationId, limit: 10_000 }), metadata, (error, response) =>
        error ? reject(error) : resolve(response.entries),
      ),
    );
  } finally {
    client.close();
  }
}

function byMessageId(requests: ReceivedRequest[]): Map<string, ReceivedRequest[]> {
  const map = new Map<string, ReceivedRequest[]>();
  for (const request of requests) {
    const id = request.json?.messageId as string;
    map.set(id, [...(map.get(id) ?? []), request]);
  }
  return map;
}

describe("end states", () => {
  it(
    "every call, whatever its ids, keys and values, is refused by name or reaches its end state with bounded requests",
    async () => {
      const batches = fc.sample(
        fc.array(fc.record({ id: messageIdPart, event: eventName, properties, context: fc.option(properties, { nil: undefined }) }), {
          minLength: CALLS_PER_BATCH,
          maxLength: CALLS_PER_BATCH,
        }),
        { seed, numRuns: BATCHES },
      );
      const accepted: SentCall[] = [];
      const refusals = new Map<string, number>();
      let serial = 0;
      for (const batch of batches) {
        // A unique tail keeps the ids apart (ingest de-duplicates by id) without making them tame.
        const calls = batch.map((call) => ({
          type: "track",
          userId: "u-1",
          messageId: call.id === null ? "" : `${call.id}~${serial++}`,
          event: call.event,
          properties: call.properties,
          ...(call.context ? { context: call.context } : {}),
        }));
        const response = await fetch(`${pipeline.httpUrl}/v1/batch`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basicAuthorization(WRITE_KEY) },
          body: JSON.stringify({ batch: calls }),
        });
        const answer = (await response.json()) as {
          success: boolean;
          rejected?: { index: number; field: string; rule: string; message: string }[];
          error?: { rejected?: { index: number; field: string; rule: string; message: string }[] };
        };
        const rejected = answer.rejected ?? answer.error?.rejected ?? [];
        expect([200, 400], JSON.stringify(answer)).toContain(response.status);
        for (const rejection of rejected) {
          expect(rejection.rule, JSON.stringify(rejection)).toMatch(/^[a-z_]+$/);
          expect(rejection.message.length).toBeGreaterThan(5);
        }
        const refusedIndexes = new Set(rejected.map((rejection) => rejection.index));
        for (const rejection of rejected) {
          const rule = `${rejection.field}:${rejection.rule}`;
          refusals.set(rule, (refusals.get(rule) ?? 0) + 1);
        }
        calls.forEach((call, index) => {
          if (!refusedIndexes.has(index)) accepted.push({ messageId: call.messageId, json: JSON.stringify(call.properties) });
        });
      }
      process.stdout.write(
        `end states: ${accepted.length} calls accepted; refused by rule: ${JSON.stringify(Object.fromEntries(refusals))}\n`,
      );
      expect(accepted.length).toBeGreaterThan(0);

      const ids = accepted.map((call) => call.messageId);
      await waitFor(
        "every accepted call dead-lettered at the 400 and the 500 receiver",
        async () => {
          const [refused, failing] = await Promise.all([deadLetters("refused"), deadLetters("failing")]);
          return refused.length >= ids.length && failing.length >= ids.length;
        },
        // Its window, then at most one retry delay and the time to work through the calls.
        { timeoutMs: WINDOW_MS + 60_000, intervalMs: 250 },
      );
      await waitFor("delivery to settle", () => pipeline.settled(), { timeoutMs: 30_000 });

      const ok = byMessageId(receivers.ok.requests);
      const signed = byMessageId(receivers.signed.requests);
      const refused = byMessageId(receivers.refused.requests);
      const failing = byMessageId(receivers.failing.requests);
      const refusedDead = new Map(
        (await deadLetters("refused")).map((entry) => [entry.deadLetter!.task!.call!.messageId, entry.deadLetter!]),
      );
      const failingDead = new Map(
        (await deadLetters("failing")).map((entry) => [entry.deadLetter!.task!.call!.messageId, entry.deadLetter!]),
      );
      const bound = maxRequests();
      for (const call of accepted) {
        const name = JSON.stringify(call.messageId);
        expect(ok.get(call.messageId), `ok ${name}`).toHaveLength(1);
        expect(JSON.stringify(ok.get(call.messageId)![0]!.json.properties), `properties of ${name}`).toBe(call.json);
        const [signedRequest] = signed.get(call.messageId) ?? [];
        expect(signedRequest, `signed ${name}`).toBeDefined();
        expect(verifyStandardWebhook(signedRequest!.raw, signedRequest!.headers, SIGNING_SECRET), `signature of ${name}`).toMatchObject({
          valid: true,
        });
        expect(refused.get(call.messageId), `refused ${name}`).toHaveLength(1);
        expect(refusedDead.get(call.messageId)?.reason, `refused dead letter of ${name}`).toBe("permanent_failure");
        expect(failingDead.get(call.messageId)?.reason, `failing dead letter of ${name}`).toBe("window_exhausted");
        expect(failing.get(call.messageId)?.length ?? 0, `requests to the failing receiver for ${name}`).toBeLessThanOrEqual(bound);
      }
      expect(signed.size).toBe(accepted.length);
      const poison = await pipeline.jsm.streams.info(pipeline.names.poisonStream);
      expect(poison.state.messages).toBe(0);
    },
    profile.timeoutMs,
  );
});
