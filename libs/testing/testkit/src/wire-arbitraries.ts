import { makeCall } from "./calls.js";
import { MAX_CALL_BYTES } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import fc from "fast-check";

/**
 * Random switchyard.v1.Call bytes for property tests of the gRPC fast path:
 * valid and invalid calls (every payload kind, none, missing or empty fields,
 * overlong ids, integrations of the wrong types), random Struct contents
 * (non-ASCII and control characters, `__proto__` keys, NaN, ±Infinity, -0,
 * deep nesting), strings near the size limits, and wire-level variety the
 * generated encoder never produces (fields in any order, unknown fields,
 * repeated text fields, a client's received_at, odd timestamps, text that is
 * not UTF-8).
 */

type JsonLike = null | boolean | number | string | JsonLike[] | { [key: string]: JsonLike };

/** Text of every kind: ASCII, any code point (lone surrogates included), and the characters JSON escapes. */
export const anyText = (maxLength = 12): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: "binary", maxLength }),
    fc.constantFrom("", "\u0000", '"', "\\", "\n\t", "\u001f", "é", "😀", "\u2028", "\ufeffbom", "__proto__", "constructor"),
  );

const number = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -0, 1e21, -1e-7, 1.5e300, Number.MAX_SAFE_INTEGER, -Number.MIN_VALUE, Number.NaN, Infinity, -Infinity),
);

const { value: jsonValue } = fc.letrec<{ value: JsonLike }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    number,
    anyText(),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(anyText(6), tie("value"), { maxKeys: 4 }),
  ),
}));

export const anyStruct: fc.Arbitrary<Record<string, JsonLike>> = fc.dictionary(anyText(8), jsonValue, { maxKeys: 5 });
const optionalStruct = fc.option(anyStruct, { nil: undefined });

/** Ids: absent, empty, ordinary, non-ASCII, and either side of the 128-character limit. */
const id = fc.oneof(
  fc.constant(""),
  anyText(20),
  fc.constantFrom("a".repeat(128), "b".repeat(129), "é".repeat(128), "😀".repeat(64), "😀".repeat(65)),
);

const integrationValue = fc.oneof(fc.boolean(), anyStruct, fc.constant(null), number, anyText());
const integrations = fc.option(fc.dictionary(anyText(8), integrationValue, { maxKeys: 3 }), { nil: undefined });

/** Dates a Timestamp can carry, including before 1970 and after 9999. */
const date = fc.oneof(
  fc.date({ noInvalidDate: true, min: new Date("1900-01-01"), max: new Date("2100-01-01") }),
  fc.date({ noInvalidDate: true }),
);

const payload: fc.Arbitrary<Call["payload"]> = fc.oneof(
  fc.constant(undefined),
  fc.record({ $case: fc.constant("identify" as const), value: fc.record({ traits: optionalStruct }) }),
  fc.record({ $case: fc.constant("track" as const), value: fc.record({ event: id, properties: optionalStruct }) }),
  fc.record({ $case: fc.constant("page" as const), value: fc.record({ name: id, category: id, properties: optionalStruct }) }),
  fc.record({ $case: fc.constant("screen" as const), value: fc.record({ name: id, category: id, properties: optionalStruct }) }),
  fc.record({ $case: fc.constant("group" as const), value: fc.record({ groupId: id, traits: optionalStruct }) }),
  fc.record({ $case: fc.constant("alias" as const), value: fc.record({ previousId: id }) }),
  fc.record({ $case: fc.constant("delete" as const), value: fc.constant({}) }),
);

export const anyCall: fc.Arbitrary<Call> = fc
  .record({
    messageId: id,
    userId: fc.oneof(fc.constant("user-1"), id),
    anonymousId: id,
    timestamp: fc.option(date, { nil: undefined }),
    context: optionalStruct,
    integrations,
    receivedAt: fc.option(date, { nil: undefined }),
    payload,
  })
  .map(makeCall);

/** Every field at its default. */
const EMPTY_CALL: Call = Call.fromPartial({});

/** Each set field of a call encoded on its own: concatenated in any order they are still that call. */
function fieldsOf(value: Call): Buffer[] {
  const parts: Partial<Call>[] = [
    { messageId: value.messageId },
    { userId: value.userId },
    { anonymousId: value.anonymousId },
    { timestamp: value.timestamp },
    { context: value.context },
    { integrations: value.integrations },
    { receivedAt: value.receivedAt },
    { payload: value.payload },
  ];
  return parts.map((part) => Buffer.from(Call.encode({ ...EMPTY_CALL, ...part }).finish())).filter((bytes) => bytes.length > 0);
}

export function varint(value: bigint | number): Buffer {
  const bytes: number[] = [];
  let rest = BigInt.asUintN(64, BigInt(value));
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    bytes.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return Buffer.from(bytes);
}

export function lengthDelimited(fieldNumber: number, body: Uint8Array): Buffer {
  return Buffer.concat([varint((fieldNumber << 3) | 2), varint(body.length), body]);
}

/** A Timestamp field with any seconds and nanos, including values no Date can hold and nanos that are not whole milliseconds. */
const oddTimestampField = fc
  .record({
    field: fc.constantFrom(4, 7),
    seconds: fc.oneof(fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), fc.constantFrom(10n ** 15n, -(10n ** 12n), 2n ** 53n, 0n)),
    nanos: fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: 0, max: 999_999_999 })),
  })
  .map(({ field, seconds, nanos }) => lengthDelimited(field, Buffer.concat([varint(0x08), varint(seconds), varint(0x10), varint(nanos)])));

/** A field number Call does not define, with a well-formed value of any wire type. */
const unknownField = fc.oneof(
  fc
    .tuple(fc.integer({ min: 17, max: 2 ** 29 - 1 }), fc.bigInt(0n, 2n ** 64n - 1n))
    .map(([n, v]) => Buffer.concat([varint(BigInt(n) * 8n), varint(v)])),
  fc.tuple(fc.integer({ min: 17, max: 500 }), fc.uint8Array({ maxLength: 20 })).map(([n, body]) => lengthDelimited(n, body)),
  fc.integer({ min: 17, max: 500 }).map((n) => Buffer.concat([varint((n << 3) | 1), Buffer.alloc(8, 7)])),
  fc.integer({ min: 17, max: 500 }).map((n) => Buffer.concat([varint((n << 3) | 5), Buffer.alloc(4, 9)])),
  // Known field numbers with the wrong wire type are unknown to the decoder too.
  fc.constantFrom(1, 5, 11).map((n) => Buffer.concat([varint(n << 3), varint(1)])),
);

/** Byte sequences that are not UTF-8: bad lead and continuation bytes, cut short, an encoded surrogate, overlong, past U+10FFFF. */
const notUtf8 = fc
  .tuple(
    fc.constantFrom([0xff], [0x80], [0xc3], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]),
    fc.constantFrom("", "a", "é"),
  )
  .map(([bad, around]) => Buffer.concat([Buffer.from(around), Buffer.from(bad), Buffer.from(around)]));

const entry = (key: Buffer, value: Buffer) => lengthDelimited(1, Buffer.concat([lengthDelimited(1, key), lengthDelimited(2, value)]));
const stringValue = (text: Buffer) => lengthDelimited(3, text);

/** A field holding text that is not UTF-8 somewhere: an id, a payload's text, a Struct key or string value, nested or in a list. */
const notUtf8Field = fc.tuple(notUtf8, fc.integer({ min: 0, max: 7 })).map(([bad, where]) => {
  const ok = Buffer.from("k");
  switch (where) {
    case 0:
      return lengthDelimited(1, bad); // messageId
    case 1:
      return lengthDelimited(2, bad); // userId
    case 2:
      return lengthDelimited(3, bad); // anonymousId
    case 3:
      return lengthDelimited(5, entry(bad, stringValue(ok))); // a context key
    case 4:
      return lengthDelimited(5, entry(ok, lengthDelimited(5, entry(ok, stringValue(bad))))); // context.k.k
    case 5:
      return lengthDelimited(6, entry(ok, lengthDelimited(5, entry(ok, stringValue(bad))))); // integrations.k.k
    case 6:
      return lengthDelimited(11, Buffer.concat([lengthDelimited(1, bad)])); // a track's event
    default:
      // A page's properties.k.1, in a list.
      return lengthDelimited(
        12,
        lengthDelimited(
          3,
          entry(ok, lengthDelimited(6, Buffer.concat([lengthDelimited(1, stringValue(ok)), lengthDelimited(1, stringValue(bad))]))),
        ),
      );
  }
});

/** A call's bytes: a generated Call, its fields in random order, sometimes with extra fields the encoder never writes. */
export const callBytes: fc.Arbitrary<Buffer> = fc
  .tuple(
    anyCall,
    fc.boolean(),
    fc.array(
      fc.oneof(
        unknownField,
        oddTimestampField,
        id.map((text) => lengthDelimited(1, Buffer.from(text))),
        notUtf8Field,
      ),
      { maxLength: 3 },
    ),
  )
  .chain(([value, shuffle, extras]) => {
    const fields = [...fieldsOf(value), ...extras];
    return (shuffle ? fc.shuffledSubarray(fields, { minLength: fields.length }) : fc.constant(fields)).map((ordered) =>
      Buffer.concat(ordered),
    );
  });

/** A valid track call whose properties hold a string making its JSON about `jsonBytes` long (± a few bytes). */
export const callNearSize = (jsonBytes: number = MAX_CALL_BYTES): fc.Arbitrary<Buffer> =>
  fc
    .tuple(
      fc.integer({ min: -40, max: 40 }),
      fc.constantFrom("x", "é", "\n", "\u0001"),
      fc.option(fc.double({ noNaN: true }), { nil: undefined }),
    )
    .map(([slack, unit, extra]) => {
      const base: Call = {
        ...EMPTY_CALL,
        userId: "u",
        payload: { $case: "track", value: { event: "E", properties: extra === undefined ? { blob: "" } : { blob: "", extra } } },
      };
      const overhead = Buffer.byteLength(JSON.stringify({ type: "track", userId: "u", event: "E", properties: { blob: "", extra } }));
      const unitJsonBytes = Buffer.byteLength(JSON.stringify(unit)) - 2;
      const repeat = Math.max(0, Math.floor((jsonBytes - overhead + slack) / unitJsonBytes));
      const properties = { ...(base.payload?.$case === "track" ? base.payload.value.properties : {}), blob: unit.repeat(repeat) };
      return Buffer.from(Call.encode({ ...base, payload: { $case: "track", value: { event: "E", properties } } }).finish());
    });

/** Lists nested `depth` deep in a track call's properties: around the decoder's nesting limit. */
export const deeplyNestedCall = fc.integer({ min: 40, max: 50 }).map((depth) => {
  let value: JsonLike = "leaf";
  for (let level = 0; level < depth; level++) value = [value];
  return Buffer.from(
    Call.encode({ ...EMPTY_CALL, userId: "u", payload: { $case: "track", value: { event: "E", properties: { value } } } }).finish(),
  );
});
