import { makeCall } from "./calls.js";
import { CALL_FIELDS, type Call, type CallBatch } from "@switchyard/contracts";
import fc from "fast-check";

/*
 * fast-check arbitraries of calls and batches for property tests of code that
 * reads them from the wire: everything a hand-written reader could get wrong.
 */

/** Object keys, integer-like ones and "__proto__" included: object key order and prototypes are where readers differ. */
const key = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("1", "10", "2", "__proto__", "constructor", ""));

/** What a free-form object (a google.protobuf.Struct) can hold: NaN, -0 and infinities among the numbers. */
const freeFormArbitrary: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ object: Record<string, unknown>; value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.double(),
    fc.string({ maxLength: 12 }),
    fc.boolean(),
    tie("object"),
    fc.array(tie("value"), { maxLength: 4 }),
  ),
  object: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
})).object;

const text = fc.string({ maxLength: 10 });
const date = fc.date({ min: new Date(-1e14), max: new Date(1e14), noInvalidDate: true });

const payload: fc.Arbitrary<Call["payload"]> = fc.oneof(
  fc.record({ $case: fc.constant("identify" as const), value: fc.record({ traits: fc.option(freeFormArbitrary, { nil: undefined }) }) }),
  fc.record({
    $case: fc.constant("track" as const),
    value: fc.record({ event: text, properties: fc.option(freeFormArbitrary, { nil: undefined }) }),
  }),
  fc.record({
    $case: fc.constant("page" as const),
    value: fc.record({ name: text, category: text, properties: fc.option(freeFormArbitrary, { nil: undefined }) }),
  }),
  fc.record({
    $case: fc.constant("screen" as const),
    value: fc.record({ name: text, category: text, properties: fc.option(freeFormArbitrary, { nil: undefined }) }),
  }),
  fc.record({
    $case: fc.constant("group" as const),
    value: fc.record({ groupId: text, traits: fc.option(freeFormArbitrary, { nil: undefined }) }),
  }),
  fc.record({ $case: fc.constant("alias" as const), value: fc.record({ previousId: text }) }),
  fc.record({ $case: fc.constant("delete" as const), value: fc.constant({}) }),
  fc.constant(undefined),
);

/** An arbitrary value of each kind of field the Call model has (a field added to calls.proto is generated too). */
const BY_KIND: Record<Exclude<(typeof CALL_FIELDS)[number]["kind"], "payload">, fc.Arbitrary<unknown>> = {
  text,
  timestamp: fc.option(date, { nil: undefined }),
  struct: fc.option(freeFormArbitrary, { nil: undefined }),
};

export const callArbitrary: fc.Arbitrary<Call> = fc
  .record({
    ...Object.fromEntries(CALL_FIELDS.flatMap((field) => (field.kind === "payload" ? [] : [[field.json, BY_KIND[field.kind]]]))),
    payload,
  })
  .map((fields) => makeCall(fields as Partial<Call>));

export const callBatchArbitrary: fc.Arbitrary<CallBatch> = fc.record({
  batchId: text,
  sourceId: text,
  receivedAt: fc.option(date, { nil: undefined }),
  calls: fc.array(callArbitrary, { maxLength: 4 }),
});

/**
 * Encoded batches with a few bytes overwritten and the end cut off, and
 * random bytes: input a reader must refuse, or read as the generated decoder does.
 */
export function damagedBatchBytes(encode: (batch: CallBatch) => Uint8Array): fc.Arbitrary<Uint8Array> {
  const damaged = fc
    .tuple(callBatchArbitrary, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), fc.nat())
    .map(([value, edits, cut]) => {
      const bytes = Uint8Array.from(encode(value));
      if (bytes.length === 0) return bytes;
      for (const [at, byte] of edits) bytes[at % bytes.length] = byte;
      return bytes.subarray(0, bytes.length - (cut % Math.max(1, Math.floor(bytes.length / 4))));
    });
  return fc.oneof(damaged, fc.uint8Array({ maxLength: 64 }));
}
