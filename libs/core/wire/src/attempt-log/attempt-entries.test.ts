import { DeliveryAttempt, DeliveryAttempts } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WireReader } from "../reader.js";
import { AttemptFacts, attemptEntryRanges, attemptWithoutExchange } from "./attempt-entries.js";

const text = fc.string({ maxLength: 12 });
const attempt = fc
  .record({
    destinationId: text,
    messageId: fc.oneof(text, fc.constant("m-ünïcode-€")),
    url: text,
    status: fc.nat({ max: 599 }),
    error: text,
    latencyMs: fc.nat(),
    attempt: fc.nat({ max: 20 }),
    at: fc.option(fc.date({ min: new Date(0), max: new Date(4_102_444_800_000), noInvalidDate: true }), { nil: undefined }),
    outcome: fc.constantFrom("delivered", "failed", "dead_lettered", ""),
    sourceId: text,
    batchMessageIds: fc.array(fc.oneof(text, fc.constant("m-ünïcode-€")), { maxLength: 4 }),
    exchange: fc.option(
      fc
        .record({
          method: fc.constant("POST"),
          url: text,
          requestBody: fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
        })
        .map((exchange) => ({
          ...exchange,
          requestHeaders: [{ name: "x-signature", value: "sha1=abc" }],
        })),
      { nil: undefined },
    ),
  })
  .map((fields) => DeliveryAttempt.fromPartial(fields));

describe("the attempt log read from its bytes", () => {
  it("finds each entry, reads its facts and leaves out its exchange as the generated decoder reads them", () => {
    const facts = new AttemptFacts();
    fc.assert(
      fc.property(fc.array(attempt, { maxLength: 5 }), (attempts) => {
        const bytes = DeliveryAttempts.encode({ attempts }).finish();
        const ranges = attemptEntryRanges(bytes);
        expect(ranges).toHaveLength(2 * attempts.length);
        const reader = new WireReader(bytes);
        attempts.forEach((expected, index) => {
          const entry = bytes.subarray(ranges[2 * index], ranges[2 * index + 1]);
          expect(DeliveryAttempt.decode(entry)).toEqual(expected);
          expect(attemptWithoutExchange(entry)).toEqual({ ...expected, exchange: undefined });
          expect(facts.read(reader, ranges[2 * index]!, ranges[2 * index + 1]!)).toBe(true);
          expect(facts.atMs).toBe(expected.at?.getTime() ?? 0);
          expect(facts.outcomeIs(Buffer.from(expected.outcome))).toBe(true);
          expect(facts.outcomeIs(Buffer.from(`${expected.outcome}x`))).toBe(false);
          expect(facts.messageIdIs(Buffer.from(expected.messageId))).toBe(true);
          // A batch's request is found by each of its calls' messageIds, and by no other.
          for (const id of expected.batchMessageIds) expect(facts.messageIdIs(Buffer.from(id))).toBe(true);
          const other = `${expected.messageId}|${expected.batchMessageIds.join("|")}|other`;
          expect(facts.messageIdIs(Buffer.from(other))).toBe(false);
        });
      }),
      { numRuns: 300 },
    );
  });
});
