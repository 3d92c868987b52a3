import { readCallBatches, type StoredBatch } from "@switchyard/testkit";
import { expect } from "vitest";
import type { IngestFixture } from "@switchyard/testkit/fixtures/ingest";
import type { Analytics, CallOutcome, DeliveredEvent, FailedEvent } from "../src/index.js";

/** Records the client's events. */
export function recordEvents(analytics: Analytics): { delivered: DeliveredEvent[]; failed: FailedEvent[] } {
  const events = { delivered: [] as DeliveredEvent[], failed: [] as FailedEvent[] };
  analytics.on("delivered", (event) => events.delivered.push(event));
  analytics.on("failed", (event) => events.failed.push(event));
  return events;
}

/** Every batch in JetStream that holds one of these messages. */
export async function batchesWith(fixture: IngestFixture, messageIds: Iterable<string>): Promise<StoredBatch[]> {
  const wanted = new Set(messageIds);
  const batches = await readCallBatches(fixture.nc, fixture.names);
  return batches.filter((stored) => stored.batch.calls.some((call) => wanted.has(call.messageId)));
}

/** How often each of these messages is stored in JetStream. */
async function storedCounts(fixture: IngestFixture, messageIds: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map(messageIds.map((id) => [id, 0]));
  for (const stored of await batchesWith(fixture, messageIds)) {
    for (const call of stored.batch.calls) if (counts.has(call.messageId)) counts.set(call.messageId, counts.get(call.messageId)! + 1);
  }
  return counts;
}

export async function expectStoredOnce(fixture: IngestFixture, messageIds: readonly string[]): Promise<void> {
  const counts = await storedCounts(fixture, messageIds);
  const wrong = [...counts].filter(([, count]) => count !== 1);
  expect(wrong).toEqual([]);
}

/** A deterministic mix of every call type, each with its own fields. */
export function sampleCall(index: number): {
  type: "identify" | "track" | "page" | "screen" | "group" | "alias";
  message: Record<string, any>;
} {
  const userId = `user-${index}`;
  const common = {
    context: { ip: `10.0.${index % 256}.${index % 7}`, locale: "de-DE", app: { build: index } },
    ...(index % 5 === 0 ? { timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, index)) } : {}),
    ...(index % 9 === 0 ? { integrations: { All: false, Webhooks: true } } : {}),
  };
  switch (index % 6) {
    case 0:
      return {
        type: "identify",
        message: { userId, traits: { email: `u${index}@example.com`, plan: "pro", seats: index % 50 }, ...common },
      };
    case 1:
      return {
        type: "track",
        message: {
          anonymousId: `anon-${index}`,
          event: "Order Completed",
          properties: { total: index / 4, items: [{ sku: `s${index}`, n: 1 }], gift: index % 2 === 0 },
          ...common,
        },
      };
    case 2:
      return {
        type: "page",
        message: {
          userId,
          name: "Pricing",
          category: "Docs",
          properties: { url: `https://example.com/p/${index}`, path: "/p" },
          ...common,
        },
      };
    case 3:
      return { type: "screen", message: { userId, name: "Home", properties: { variant: null, index }, ...common } };
    case 4:
      return {
        type: "group",
        message: { userId, groupId: `org-${index % 97}`, traits: { name: "ACME ünïcødé", employees: 12 }, ...common },
      };
    default:
      return { type: "alias", message: { userId, previousId: `anon-${index}`, ...common } };
  }
}

export function send(analytics: Analytics, index: number, callback?: (outcome: CallOutcome) => void): string {
  const { type, message } = sampleCall(index);
  return (analytics[type] as (message: object, callback?: (outcome: CallOutcome) => void) => string).call(analytics, message, callback);
}
