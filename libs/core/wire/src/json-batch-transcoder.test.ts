import { isDeepStrictEqual } from "node:util";
import { checkCall, MAX_CALL_BYTES, tooDeeplyNestedField, validCallToProto, type Rejection } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EncodedCall } from "./call-batch-encoder.js";
import { transcodeBatchBody, type TranscodedBatch } from "./json-batch-transcoder.js";
import { AcceptTime } from "./pass-through-call.js";

/** The id ingest gives a call that came without one. */
const INGEST_ID = "6f1c2d3e-0000-4000-8000-00000000beef";
const acceptTime = new AcceptTime(new Date("2026-11-25T06:00:00.123Z"));

/**
 * The batch endpoint's straightforward reading of one call (ingest's http-api.ts batchRequest with
 * no batch-level context or integrations, which the transcoder leaves to it): ids that are null or
 * "" dropped, then the rules, the nesting rule and the generated encoder.
 */
function straightforward(call: unknown): { ok: true; messageId: string | undefined; bytes: Buffer } | { ok: false; rejection: Rejection } {
  let merged = call;
  if (typeof call === "object" && call !== null && !Array.isArray(call)) {
    const copy: Record<string, unknown> = { ...call };
    const { userId, anonymousId } = copy;
    if (userId === null || userId === "" || anonymousId === null || anonymousId === "") {
      const { userId: _u, anonymousId: _a, ...rest } = copy;
      if (userId !== undefined && userId !== null && userId !== "") rest.userId = userId;
      if (anonymousId !== undefined && anonymousId !== null && anonymousId !== "") rest.anonymousId = anonymousId;
      merged = rest;
    } else merged = copy;
  }
  const check = checkCall(merged, 0);
  if (!check.ok) return check;
  const field = tooDeeplyNestedField(check.call);
  if (field !== undefined) return { ok: false, rejection: { index: 0, messageId: "", field, rule: "max_depth", message: "" } };
  const messageId = check.call.messageId ?? INGEST_ID;
  const bytes = Buffer.from(Call.encode(validCallToProto(check.call, { messageId, receivedAt: acceptTime.date })).finish());
  return { ok: true, messageId: check.call.messageId, bytes };
}

function bytesOf(call: EncodedCall): Buffer {
  const target = Buffer.alloc(call.byteLength);
  expect(call.writeTo(target, 0)).toBe(call.byteLength);
  return target;
}

/**
 * The transcoder's answer held to JSON.parse of the whole body: a body it takes is valid JSON with
 * a batch array and no batch-level context or integrations, its writeKey is the parsed one, every
 * span parses to the parsed call (so the ordinary path gets exactly what it got), and every call it
 * wrote is one the straightforward path accepts, with the same bytes, messageId, type and event.
 */
function holdsToStraightforward(body: string): { fast: number; calls: number; taken: boolean } {
  const bytes = Buffer.from(body, "utf8");
  const transcoded: TranscodedBatch | undefined = transcodeBatchBody(bytes, acceptTime);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch {
    expect(transcoded).toBeUndefined();
    return { fast: 0, calls: 0, taken: false };
  }
  if (!transcoded) return { fast: 0, calls: 0, taken: false };
  const json = parsed as Record<string, unknown>;
  expect(typeof json === "object" && json !== null && !Array.isArray(json)).toBe(true);
  expect(json.context).toBeUndefined();
  expect(json.integrations).toBeUndefined();
  expect(transcoded.writeKey).toBe(json.writeKey);
  const batch = json.batch as unknown[];
  expect(Array.isArray(batch)).toBe(true);
  expect(transcoded.calls.length).toBe(batch.length);
  let fast = 0;
  transcoded.calls.forEach((call, index) => {
    const parsedCall = batch[index];
    expect(isDeepStrictEqual(JSON.parse(bytes.toString("utf8", call.start, call.end)), parsedCall)).toBe(true);
    if (!call.fast) return;
    fast++;
    const expected = straightforward(parsedCall);
    if (!expected.ok) throw new Error(`the transcoder wrote call ${index}, which the rules refuse: ${JSON.stringify(expected.rejection)}`);
    expect(call.fast.clientMessageId).toBe(expected.messageId);
    expect(bytesOf(call.fast.encoded(INGEST_ID)).toString("hex")).toBe(expected.bytes.toString("hex"));
    const { type, event } = parsedCall as { type: string; event?: unknown };
    expect(call.type).toBe(type);
    expect(call.event).toBe(typeof event === "string" ? event : undefined);
  });
  return { fast, calls: batch.length, taken: true };
}

// ---- JSON text, written by hand so that the body has what JSON.stringify never writes. ----

const space = fc.constantFrom("", "", "", " ", "\n  ", "\t", "\r\n");

/** Numbers of every shape JSON allows, and a few it does not. */
const numberText = fc.oneof(
  fc.constantFrom(
    "0",
    "-0",
    "1e21",
    "1E21",
    "1e-7",
    "1e5",
    "2E+2",
    "12.50",
    "-3.125",
    "0.1",
    "1.0",
    "123456789012345",
    "1234567890123456",
    "9007199254740993",
    "123456789012345678901",
    "1e400",
    "-1e400",
    "5e-324",
    "0.0000001",
    "100000000000000000000",
  ),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
);

/** Text as JSON.stringify writes it, or with escapes it never writes. */
const textOf = (text: string, escape: number): string => {
  const plain = JSON.stringify(text);
  if (escape === 0 || text.length === 0) return plain;
  if (escape === 1) return `"\\u${text.charCodeAt(0).toString(16).padStart(4, "0")}${plain.slice(2)}`;
  return `${plain.slice(0, -1)}\\/"`;
};
const rawText = fc.oneof(
  { weight: 5, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 10, unit: "grapheme" }) },
  { weight: 1, arbitrary: fc.constantFrom("é", "😀", "\u2028", "\ud800", 'a"b\\c', "\n", "x".repeat(200), "é".repeat(100)) },
  // What ends a text at each place within the four bytes the scan reads at once.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.nat(9), fc.constantFrom('"', "\\", "\u0001", "\u001f", "é", " "))
      .map(([at, end]) => `${"abcdefghi".slice(0, at)}${end}xyz`),
  },
);
const stringText = fc.tuple(rawText, fc.constantFrom(0, 0, 0, 0, 1, 2)).map(([text, escape]) => textOf(text, escape));

const keyText = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("a", "b", "name", "plan", "price", "url", "nested", "é", "😀").map((key) => JSON.stringify(key)),
  },
  { weight: 1, arbitrary: fc.constantFrom('"1"', '"10"', '"__proto__"', '""', '"\\u0061"', '"constructor"', '"a\\nb"') },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }).map((key) => JSON.stringify(key)) },
);

const objectText = (value: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc
    .tuple(fc.array(fc.tuple(space, keyText, space, value), { maxLength: 5 }), space)
    .map(([members, end]) => `{${members.map(([a, key, b, v]) => `${a}${key}${b}:${b}${v}`).join(",")}${end}}`);

const valueText: fc.Arbitrary<string> = fc.letrec<{ value: string; object: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    numberText,
    stringText,
    fc.constantFrom("true", "false", "null"),
    tie("object"),
    fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(", ")}]`),
  ),
  object: objectText(tie("value")),
})).value;
const freeFormText = objectText(valueText);
/** An object as JSON.stringify writes one (no repeated or integer-like keys), values of any shape. */
const plainObjectText: fc.Arbitrary<string> = fc
  .uniqueArray(fc.tuple(fc.constantFrom("a", "b", "name", "plan", "price", "url", "nested", "é", "😀", "", "k1", "x y"), valueText), {
    maxLength: 6,
    selector: ([key]) => key,
  })
  .map((members) => `{${members.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(",")}}`);

/** Nested near and past what the fast path and the rules take. */
const deepText = fc.integer({ min: 15, max: 52 }).map((depth) => {
  let text = '{"leaf":1}';
  for (let level = 0; level < depth; level++) text = level % 2 === 0 ? `{"a":${text}}` : `[${text}]`;
  return `{"deep":${text}}`;
});

const idText = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('"u-1"', '"anon-7"', '"ü-1"', '"b7d2c5c0-1111-4111-8111-000000000001"') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '""',
      "null",
      "5",
      "{}",
      `"${"x".repeat(128)}"`,
      `"${"x".repeat(129)}"`,
      '"m\\r\\n"',
      '"\\u0085"',
      '"\\ud800"',
    ),
  },
  { weight: 1, arbitrary: stringText },
);
const timestampText = fc.constantFrom(
  '"2026-11-21T10:00:00.000Z"',
  '"2026-11-21T10:00:00Z"',
  '"2026-11-21T10:00:00.123456+00:00"',
  '"2026-11-21T10:00:00+02:00"',
  '"2026-11-21"',
  '"0001-01-01T00:00:00Z"',
  '"2026-13-45T10:00:00.000Z"',
  '"yesterday"',
  '""',
  "1700000000",
  "null",
);
const typeText = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("track", "identify", "page", "screen", "group", "alias").map((type) => `"${type}"`) },
  { weight: 1, arbitrary: fc.constantFrom('"bogus"', '"Track"', "5", "null", '"\\u0074rack"') },
);
const payloadText = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('"Signed Up"', '"Home"', '"g-1"', '"Docs"') },
  { weight: 1, arbitrary: fc.constantFrom('""', "null", "5", '"Sign\\u0065d Up"', '"\\ud800"') },
  { weight: 1, arbitrary: stringText },
);
const integrationsText = fc.oneof(
  fc.constantFrom('{"All":true,"Mixpanel":false}', '{"Amplitude":{"session_id":1}}', '{"x":1}', "{}", '{"a":null}', "[]"),
  freeFormText,
);

/** The members of a call: what the fast path reads, what it skips, and what makes it wary. */
const memberText = fc.oneof(
  { weight: 4, arbitrary: typeText.map((v) => ["type", v] as const) },
  { weight: 3, arbitrary: idText.map((v) => ["messageId", v] as const) },
  { weight: 3, arbitrary: idText.map((v) => ["userId", v] as const) },
  { weight: 3, arbitrary: idText.map((v) => ["anonymousId", v] as const) },
  { weight: 2, arbitrary: timestampText.map((v) => ["timestamp", v] as const) },
  { weight: 3, arbitrary: fc.oneof(freeFormText, deepText, fc.constant("5")).map((v) => ["context", v] as const) },
  { weight: 2, arbitrary: integrationsText.map((v) => ["integrations", v] as const) },
  { weight: 3, arbitrary: payloadText.map((v) => ["event", v] as const) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom("name", "category", "groupId", "previousId"), payloadText) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom("properties", "traits"), fc.oneof(freeFormText, deepText, fc.constant("[]"))) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom("sentAt", "_metadata", "version", "1", "__proto__", "\\u0074ype", "channel"), valueText),
  },
);
/** A call as an SDK sends it: valid, with free-form values of every shape. */
const cleanCallText = fc
  .tuple(
    fc.constantFrom(
      ['"type":"track"', '"event":"Signed Up"', '"properties"'],
      ['"type":"identify"', '"traits"'],
      ['"type":"page"', '"name":"Home"', '"category":"Docs"', '"properties"'],
      ['"type":"screen"', '"name":"Home"', '"properties"'],
      ['"type":"group"', '"groupId":"g-1"', '"traits"'],
      ['"type":"alias"', '"previousId":"p-1"'],
    ),
    fc.constantFrom('"userId":"u-1"', '"anonymousId":"a-1"', '"userId":null,"anonymousId":"a-1"', '"userId":"ü-1","anonymousId":""'),
    fc.option(fc.constantFrom('"messageId":"m-1"', '"messageId":"b7d2c5c0-1111-4111-8111-000000000001"')),
    fc.option(timestampText.filter((text) => text.includes("2026-11-21T"))),
    fc.option(fc.oneof(plainObjectText, freeFormText)),
    fc.option(fc.constantFrom('{"All":true,"Mixpanel":false}', '{"Amplitude":{"session_id":1}}', "{}")),
    fc.oneof(plainObjectText, plainObjectText, freeFormText),
    space,
  )
  .map(([[type, ...rest], id, messageId, timestamp, context, integrations, free, gap]) => {
    const members: string[] = [type!, id];
    for (const member of rest) members.push(member.endsWith('"') && member.includes(":") ? member : `${member}:${free}`);
    if (messageId !== null) members.push(messageId);
    if (timestamp !== null) members.push(`"timestamp":${timestamp}`);
    if (context !== null) members.push(`"context":${context}`);
    if (integrations !== null) members.push(`"integrations":${integrations}`);
    return `{${gap}${members.join(`,${gap}`)}}`;
  });

const oddCallText = fc
  .tuple(
    fc.constantFrom<[string, string][]>(
      [
        ["type", '"track"'],
        ["event", '"Signed Up"'],
        ["userId", '"u-1"'],
      ],
      [
        ["type", '"identify"'],
        ["anonymousId", '"a-1"'],
      ],
      [],
    ),
    fc.array(memberText, { maxLength: 8 }),
    space,
  )
  .map(([base, members, end]) => `{${[...base, ...members].map(([key, value]) => `"${key}":${value}`).join(",")}${end}}`);
const callText = fc.oneof({ weight: 2, arbitrary: cleanCallText }, { weight: 1, arbitrary: oddCallText });

const batchText = fc
  .tuple(
    fc.array(fc.oneof({ weight: 12, arbitrary: callText }, { weight: 1, arbitrary: fc.constantFrom("5", "null", "[]", '"call"') }), {
      maxLength: 6,
    }),
    fc.constantFrom<string[]>(
      [],
      ['"sentAt":"2026-11-25T06:00:00.000Z"'],
      ['"writeKey":"wk-1"'],
      ['"writeKey":"wk-\\u0031"'],
      ['"writeKey":5'],
      ['"context":{"ip":"1.2.3.4"}'],
      ['"integrations":{"All":false}'],
      ['"batch":[]'],
      ['"x":[1,{"y":2}]'],
    ),
    space,
  )
  .map(([calls, extra, gap]) => `{${gap}"batch":${gap}[${calls.join(`,${gap}`)}]${extra.map((member) => `,${member}`).join("")}${gap}}`);

/** A body spoilt by one character: cut short, or with a stray byte in it. */
const brokenText = fc
  .tuple(batchText, fc.nat(), fc.constantFrom("", ",", "}", "]", '"', "\\", "x", "\u0001", "01"))
  .map(([body, at, insert]) => {
    const cut = at % (body.length + 1);
    return body.slice(0, cut) + insert + body.slice(cut + (insert === "" ? 0 : 1));
  });

describe("transcodeBatchBody", () => {
  it("takes valid and invalid batches exactly as JSON.parse, the rules and the generated encoder do", () => {
    let fast = 0;
    let calls = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 4, arbitrary: batchText }, { weight: 1, arbitrary: brokenText }), (body) => {
        const seen = holdsToStraightforward(body);
        fast += seen.fast;
        calls += seen.calls;
      }),
      { numRuns: 3000 },
    );
    // The property would hold trivially if nothing took the fast path.
    expect(fast).toBeGreaterThan(calls / 20);
  });

  it("writes ordinary calls, and leaves what it is unsure of to the ordinary path", () => {
    const body = JSON.stringify({
      batch: [
        { type: "track", event: "Signed Up", userId: "u-1", properties: { plan: "pro", price: 12.5, tags: ["a", null, true] } },
        { type: "identify", userId: null, anonymousId: "a-1", traits: { name: "Ada", "": 1, nested: { ok: false } } },
        {
          type: "page",
          name: "Home",
          anonymousId: "a-1",
          context: { page: { url: "https://example.com/é" } },
          timestamp: "2026-11-21T10:00:00Z",
        },
        { type: "track", event: "x", userId: "u-1", properties: { 1: "integer-like key" } },
        { type: "track", event: "x", userId: "u-1", properties: { big: 1e21, small: 1e-7, negativeZero: -0 } },
        { type: "track", event: "", userId: "u-1" },
        { type: "track", event: "x" },
        // Members too long for a one-byte entry length, with numbers and text.
        { type: "track", event: "x", userId: "u-1", properties: { ["k".repeat(130)]: 1.5, ["l".repeat(120)]: "v", m: "x".repeat(130) } },
      ],
      sentAt: "2026-11-25T06:00:00.000Z",
    }).replace('"price":12.5', '"price":1.25e1');
    expect(holdsToStraightforward(body)).toEqual({ fast: 5, calls: 8, taken: true });
    const transcoded = transcodeBatchBody(Buffer.from(body), acceptTime)!;
    expect(transcoded.calls.map((call) => call.fast !== undefined)).toEqual([true, true, true, false, true, false, false, true]);
  });

  it("leaves calls near the 32 KB limit to the rules, counting what JSON.stringify adds to numbers", () => {
    /** A call of exactly `bytes` bytes in the body, its properties padded, with `numbers` numbers written as 1e9. */
    const callOf = (bytes: number, numbers = 0) => {
      const head = `{"type":"track","event":"x","userId":"u-1","properties":{"n":[${Array(numbers).fill("1e9").join(",")}],"pad":"`;
      return `${head}${"x".repeat(bytes - head.length - 3)}"}}`;
    };
    const fastUpTo = MAX_CALL_BYTES - 1024;
    const fastness = (call: string) => {
      const body = `{"batch":[${call}]}`;
      expect(holdsToStraightforward(body).taken).toBe(true);
      return transcodeBatchBody(Buffer.from(body), acceptTime)!.calls[0]!.fast !== undefined;
    };
    expect(callOf(fastUpTo).length).toBe(fastUpTo);
    expect(fastness(callOf(fastUpTo))).toBe(true);
    expect(fastness(callOf(fastUpTo + 1))).toBe(false);
    // Each 1e9 is 3 bytes in the body and 10 in JSON.stringify's text.
    expect(fastness(callOf(fastUpTo - 70, 10))).toBe(true);
    expect(fastness(callOf(fastUpTo - 69, 10))).toBe(false);
    // Over the limit: refused by the rules, as before.
    expect(straightforward(JSON.parse(callOf(MAX_CALL_BYTES + 1)))).toMatchObject({ ok: false, rejection: { rule: "max_size" } });
    expect(fastness(callOf(MAX_CALL_BYTES + 1))).toBe(false);
  });

  it("leaves bodies it does not read to the ordinary path", () => {
    for (const body of [
      "",
      "[]",
      "{}",
      '{"batch":{}}',
      '\ufeff{"batch":[]}',
      '{"batch":[],"batch":[]}',
      '{"batch":[{"type":"track"}],"context":{}}',
      '{"batch":[{"type":"track"}],"writeKey":null}',
      '{"batch":[{"type":"track"}]} x',
      '{"batch":[{"type":"track"}]',
    ]) {
      expect(transcodeBatchBody(Buffer.from(body), acceptTime)).toBeUndefined();
    }
    expect(transcodeBatchBody(Buffer.from('{"batch":[]}'), acceptTime)).toEqual({ writeKey: undefined, calls: [] });
  });
});
