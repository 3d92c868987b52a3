import { randomUUID } from "node:crypto";
import { protoCallToJson } from "@switchyard/calls";
import { Call, IngestBatchRequest } from "@switchyard/contracts";

/**
 * Realistic calls, as a backend using a Segment-style SDK sends them: a
 * messageId and timestamp on every call, a context with ip, user agent,
 * library, app and locale, and a handful of properties or traits. Roughly 60%
 * track, 25% identify, 15% page, about 600 bytes of JSON each.
 * Content comes from a seeded generator, so every run sends the same mix.
 */

const EVENTS = ["Order Completed", "Product Viewed", "Cart Updated", "Subscription Renewed", "Invoice Paid", "Signed In"];
const PLANS = ["free", "starter", "team", "enterprise"];
const PAGES = [
  { name: "Pricing", category: "Marketing", path: "/pricing" },
  { name: "Checkout", category: "Shop", path: "/checkout/payment" },
  { name: "Dashboard", category: "App", path: "/app/dashboard" },
];
const USER_AGENTS = [
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
];

/** A small seeded PRNG (mulberry32): the same sequence on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: () => number, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error("pick from an empty list");
  return item;
}

function commonFields(random: () => number, now: number): Omit<Parameters<typeof Call.fromPartial>[0], "payload"> {
  const user = Math.floor(random() * 1_000_000);
  return {
    messageId: randomUUID(),
    userId: `usr_${user.toString().padStart(7, "0")}`,
    anonymousId: random() < 0.3 ? randomUUID() : "",
    timestamp: new Date(now - Math.floor(random() * 5_000)),
    context: {
      ip: `203.0.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`,
      userAgent: pick(random, USER_AGENTS),
      library: { name: "analytics-node", version: "3.1.0" },
      app: { name: "shop-api", version: "2.14.3" },
      locale: "en-US",
      timezone: "Europe/Berlin",
    },
  };
}

function trackCall(random: () => number, now: number): Call {
  const properties = {
    orderId: `ord_${Math.floor(random() * 1e9)}`,
    revenue: Math.round(random() * 50_000) / 100,
    currency: "EUR",
    plan: pick(random, PLANS),
    items: 1 + Math.floor(random() * 5),
    coupon: random() < 0.2 ? "SPRING24" : null,
  };
  return Call.fromPartial({
    ...commonFields(random, now),
    payload: { $case: "track", value: { event: pick(random, EVENTS), properties } },
  });
}

function identifyCall(random: () => number, now: number): Call {
  const id = Math.floor(random() * 1_000_000);
  const traits = {
    email: `user${id}@example.com`,
    name: `Customer ${id}`,
    plan: pick(random, PLANS),
    createdAt: new Date(now - Math.floor(random() * 3e10)).toISOString(),
    company: { id: `cmp_${id % 5000}`, name: `Company ${id % 5000}` },
  };
  return Call.fromPartial({ ...commonFields(random, now), payload: { $case: "identify", value: { traits } } });
}

function pageCall(random: () => number, now: number): Call {
  const page = pick(random, PAGES);
  const properties = {
    url: `https://www.example.com${page.path}?utm_source=newsletter`,
    path: page.path,
    title: `${page.name} | Example`,
    referrer: "https://www.google.com/",
    search: "?utm_source=newsletter",
  };
  return Call.fromPartial({
    ...commonFields(random, now),
    payload: { $case: "page", value: { name: page.name, category: page.category, properties } },
  });
}

export function sampleCall(random: () => number, now = Date.now()): Call {
  const roll = random();
  if (roll < 0.6) return trackCall(random, now);
  if (roll < 0.85) return identifyCall(random, now);
  return pageCall(random, now);
}

/** Size of a call as ingest measures it: the UTF-8 bytes of its Segment JSON. */
export function callJsonBytes(call: Call): number {
  return Buffer.byteLength(JSON.stringify(protoCallToJson(call)), "utf8");
}

export interface EncodedBatches {
  /** IngestBatchRequest messages, already protobuf-encoded, each with its own batch id and messageIds. */
  requests: Buffer[];
  /** Mean JSON size of the calls in them. */
  meanCallJsonBytes: number;
}

/** `count` distinct batch requests of `batchSize` calls, encoded once up front. */
export function encodedBatchRequests(random: () => number, count: number, batchSize: number): EncodedBatches {
  const requests: Buffer[] = [];
  let jsonBytes = 0;
  for (let i = 0; i < count; i++) {
    const calls = Array.from({ length: batchSize }, () => sampleCall(random));
    if (i === 0) jsonBytes = calls.reduce((sum, call) => sum + callJsonBytes(call), 0);
    requests.push(toBuffer(IngestBatchRequest.encode({ batchId: randomUUID(), calls }).finish()));
  }
  return { requests, meanCallJsonBytes: jsonBytes / batchSize };
}

/** One call per payload, as the raw JetStream baseline publishes it (with receivedAt, like on the bus). */
export function encodedCalls(random: () => number, count: number): Buffer[] {
  return Array.from({ length: count }, () => toBuffer(Call.encode({ ...sampleCall(random), receivedAt: new Date() }).finish()));
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
