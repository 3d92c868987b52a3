import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { protoCallToJson } from "@switchyard/calls";
import { Call, IngestBatchRequest } from "@switchyard/contracts";
import { messageIdOf } from "@switchyard/wire";
import { prepareCall } from "./prepare-call.js";
import { CallQueue, encodeBatchRequest, QueuedCall, takeBatch } from "./queue.js";
import { LIBRARY } from "./version.js";

function bytesOf(prepared: { chunk: Buffer; offset: number; length: number }): Buffer {
  return prepared.chunk.subarray(prepared.offset, prepared.offset + prepared.length);
}

function decoded(type: Parameters<typeof prepareCall>[0], message: object): Record<string, unknown> {
  const prepared = prepareCall(type, message);
  const json = protoCallToJson(Call.decode(bytesOf(prepared)));
  expect(messageIdOf(prepared.chunk, prepared.offset)).toBe(prepared.messageId);
  expect(json.messageId).toBe(prepared.messageId);
  return json;
}

describe("the call encoder", () => {
  const long = "x".repeat(300) + " ünïcødé ✓ 🚀";
  const context = { ip: "10.0.0.1", nested: { deep: [1, "two", null, true, { three: 3 }] }, long };

  it.each([
    ["identify", { userId: "u1", traits: { email: "a@example.com", age: 42, vip: false, tags: [] } }],
    ["track", { userId: "u1", anonymousId: "a1", event: "Order Completed", properties: { total: 12.5, items: [{ sku: long }] } }],
    ["page", { anonymousId: "a1", name: "Pricing", category: "Docs", properties: { url: "https://example.com/p" } }],
    ["screen", { userId: "u1", name: "Home", properties: {} }],
    ["group", { userId: "u1", groupId: "g1", traits: { name: "ACME", employees: 1e21 } }],
    ["alias", { userId: "u2", previousId: "u1" }],
  ] as const)("writes a %s call that the generated decoder reads back field for field", (type, message) => {
    const json = decoded(type, { ...message, context, integrations: { All: false, Webhooks: true, Other: { x: 1 } } });
    expect(json).toEqual({
      ...message,
      type,
      messageId: json.messageId,
      context: { ...context, library: LIBRARY },
      integrations: { All: false, Webhooks: true, Other: { x: 1 } },
    });
  });

  it("writes what JSON.stringify would: toJSON, undefined members left out, null in arrays", () => {
    const when = new Date("2026-01-02T03:04:05.678Z");
    const json = decoded("track", {
      userId: "u",
      event: "E",
      properties: { when, gone: undefined, list: [undefined, -0.5], fn: () => 1 },
    });
    expect(json.properties).toEqual({ when: when.toISOString(), list: [null, -0.5] });
  });

  it("keeps __proto__, constructor and prototype as ordinary keys", () => {
    const properties = JSON.parse('{"__proto__":{"a":1},"constructor":"c","prototype":[2]}') as Record<string, unknown>;
    const json = decoded("track", { userId: "u", event: "E", properties });
    expect(JSON.stringify(json.properties)).toBe('{"__proto__":{"a":1},"constructor":"c","prototype":[2]}');
  });

  it("keeps timestamps to the millisecond, before and after 1970, given as Date or text", () => {
    for (const text of ["2026-11-21T10:00:00.123Z", "1969-07-20T20:17:40.500Z", "1970-01-01T00:00:00.000Z"]) {
      expect(decoded("track", { userId: "u", event: "E", timestamp: new Date(text) }).timestamp).toBe(text);
      expect(decoded("track", { userId: "u", event: "E", timestamp: text }).timestamp).toBe(text);
    }
  });

  it("keeps the caller's messageId and generates distinct ones otherwise", () => {
    expect(prepareCall("track", { userId: "u", event: "E", messageId: "mine-1" }).messageId).toBe("mine-1");
    const ids = new Set(Array.from({ length: 100 }, () => prepareCall("track", { userId: "u", event: "E" }).messageId));
    expect(ids.size).toBe(100);
  });
});

describe("batches", () => {
  function queueOf(sizes: number[]): CallQueue {
    const queue = new CallQueue();
    sizes.forEach((jsonBytes, index) => {
      const prepared = prepareCall("track", { userId: "u", event: `E${index}` });
      queue.push(new QueuedCall(prepared.chunk, prepared.offset, prepared.length, jsonBytes, index + 1, undefined));
    });
    return queue;
  }

  it("take at most maxCalls calls, in order", () => {
    const queue = queueOf([10, 10, 10, 10, 10]);
    expect(takeBatch(queue, 2).map((call) => call.seq)).toEqual([1, 2]);
    expect(takeBatch(queue, 10).map((call) => call.seq)).toEqual([3, 4, 5]);
    expect(queue.length).toBe(0);
  });

  it("stay within the JSON budget, and take an oversized first call alone", () => {
    const queue = queueOf([300, 300, 500, 100, 100]);
    expect(takeBatch(queue, 100, 700).map((call) => call.seq)).toEqual([1, 2]);
    expect(takeBatch(queue, 100, 400).map((call) => call.seq)).toEqual([3]);
    expect(takeBatch(queue, 100, 400).map((call) => call.seq)).toEqual([4, 5]);
  });

  it("encode as an IngestBatchRequest with the batch id and every call", () => {
    const queue = queueOf([10, 10, 10]);
    const calls = takeBatch(queue, 10);
    const request = IngestBatchRequest.decode(encodeBatchRequest("batch-1", calls));
    expect(request.batchId).toBe("batch-1");
    expect(request.calls.map((call) => call.messageId)).toEqual(calls.map((call) => messageIdOf(call.chunk, call.offset)));
  });
});

describe("the JSON size the encoder measures", () => {
  it("is exactly the size of the call's JSON as ingest reads it back", () => {
    const messages: [Parameters<typeof prepareCall>[0], object][] = [
      [
        "track",
        {
          userId: "u",
          event: 'quote " backslash \\ tab \t nul \u0000 bell \u0007',
          properties: { n: -12.75, big: 1e21, small: 5e-7, zero: -0 },
        },
      ],
      [
        "identify",
        { anonymousId: "a", traits: { name: "Zoë 🚀 ünïcødé", list: [1, [2, [3]], {}, [], null, true, false], when: new Date(0) } },
      ],
      [
        "page",
        {
          userId: "u",
          name: "x".repeat(100),
          category: "ä".repeat(50),
          timestamp: "2026-01-01",
          properties: { url: 'https://e.com/?q=a&b="c"' },
        },
      ],
      ["group", { userId: "u", groupId: "g", traits: { nested: { deeper: { deepest: [{ k: "v" }] } } }, timestamp: new Date(-1e12) }],
      ["alias", { userId: "u", previousId: "p", integrations: { All: false, Webhooks: { option: 1 } } }],
      ["screen", { userId: "u", context: { long: "y".repeat(40_000).slice(0, 30_000) } }],
    ];
    for (const [type, message] of messages) {
      const prepared = prepareCall(type, message);
      const json = protoCallToJson(Call.decode(bytesOf(prepared)));
      expect(prepared.jsonBytes, type).toBe(Buffer.byteLength(JSON.stringify(json), "utf8"));
    }
  });
});

describe("the JSON size of a number", () => {
  /** What the encoder counts for `value`, less what it counts for a one-character number. */
  function measured(value: number): number {
    const size = (n: number) => prepareCall("track", { userId: "u", event: "E", properties: { n } }).jsonBytes;
    return size(value) - size(0) + 1;
  }

  it("is the length of the text JSON writes, for amounts, fractions and any double", () => {
    const cents = fc.integer({ min: -1e10, max: 1e10 }).map((n) => n / 100);
    const thousandths = fc.integer({ min: -1e10, max: 1e10 }).map((n) => n / 1000);
    const doubles = fc.double({ noNaN: true, noDefaultInfinity: true });
    const near = fc.constantFrom(0.001, 0.0009, 999_999.999, 1_000_000.5, 0.1 + 0.2, 1.005, 2 ** 53 + 2, -0.5, 123.456, 9.995);
    fc.assert(
      fc.property(fc.oneof(cents, thousandths, doubles, near), (value) => {
        expect(measured(value)).toBe(JSON.stringify(value).length);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe("calls kept where they were written", () => {
  it("stay intact across chunk boundaries, also when a call outgrows the chunk half-way", () => {
    const prepared = Array.from({ length: 400 }, (_, index) =>
      prepareCall("track", { userId: `u${index}`, event: "E", properties: { index, blob: "b".repeat(index % 10 === 0 ? 30_000 : 100) } }),
    );
    expect(new Set(prepared.map((call) => call.chunk)).size).toBeGreaterThan(2);
    prepared.forEach((call, index) => {
      const json = protoCallToJson(Call.decode(bytesOf(call)));
      expect(json).toMatchObject({ messageId: call.messageId, userId: `u${index}`, properties: { index } });
    });
  });
});
