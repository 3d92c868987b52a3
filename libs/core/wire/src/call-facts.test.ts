import { CallBatch, type Call } from "@switchyard/contracts";
import { callBatchArbitrary, damagedBatchBytes, makeCall } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { walkCallBatch } from "./call-batch-walker.js";
import { scanCall } from "./call-scanner.js";
import { BatchFacts, readBatchFacts } from "./call-facts.js";
import { MalformedWireError, WireReader } from "./reader.js";

/** The facts as comparable data: per call its type, name, time and keys (sorted: key order is not a fact). */
function summary(facts: BatchFacts) {
  return {
    sourceId: facts.sourceId,
    receivedAt: facts.receivedAtMillis,
    calls: Array.from({ length: facts.count }, (_, index) => ({
      type: facts.types[index],
      name: facts.names[index],
      receivedAt: facts.receivedAt[index],
      keys: facts.keys
        .slice(facts.keyStarts[index], facts.keyStarts[index + 1])
        .map((key, at) => `${key}:${facts.keyTypes[facts.keyStarts[index]! + at]}`)
        .sort(),
    })),
  };
}

/** What the generated decoder's batch says, derived independently of the reader under test. */
function expectedSummary(batch: CallBatch) {
  const typeOf = (value: unknown) =>
    value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "object" ? "object" : typeof value;
  return {
    sourceId: batch.sourceId,
    receivedAt: batch.receivedAt?.getTime() ?? Number.NaN,
    calls: batch.calls.map((call: Call) => {
      const value = call.payload?.value as Record<string, unknown> | undefined;
      const type = call.payload?.$case;
      const name = type === "track" ? (value!.event as string) : type === "page" || type === "screen" ? (value!.name as string) : "";
      const struct = (type === "identify" || type === "group" ? value!.traits : value?.properties) as Record<string, unknown> | undefined;
      return {
        type,
        name,
        receivedAt: call.receivedAt?.getTime() ?? Number.NaN,
        keys: Object.entries(type === "alias" || type === "delete" ? {} : (struct ?? {}))
          .map(([key, member]) => `${key}:${typeOf(member)}`)
          .sort(),
      };
    }),
  };
}

function generated(bytes: Uint8Array): unknown {
  try {
    return expectedSummary(CallBatch.decode(bytes));
  } catch {
    return "throws";
  }
}

/**
 * Whether a call of the batch holds damage the generated decoder reads past rather than refuses (a
 * nested message whose length runs beyond its parent's end): ingest's checked scan refuses such a
 * call, so the bus never carries one.
 */
function misreadByDecoder(bytes: Uint8Array): boolean {
  try {
    walkCallBatch(new WireReader(bytes), bytes.length, {
      sourceId: () => undefined,
      receivedAt: () => undefined,
      call: (reader, start, end) => void scanCall(Buffer.from(reader.buf.subarray(start, end))),
    });
    return false;
  } catch (error) {
    return error instanceof MalformedWireError;
  }
}

function ours(bytes: Uint8Array, into?: BatchFacts): unknown {
  try {
    return summary(readBatchFacts(bytes, into));
  } catch {
    return "throws";
  }
}

describe("readBatchFacts", () => {
  it("reads each call's type, name, received_at and keys as the generated decoder's batch has them", () => {
    const reused = new BatchFacts();
    fc.assert(
      fc.property(callBatchArbitrary, (batch) => {
        const bytes = CallBatch.encode(batch).finish();
        expect(ours(bytes, reused)).toEqual(generated(bytes));
      }),
      { numRuns: 1_000 },
    );
  });

  it("agrees with the generated decoder on every damaged batch the decoder reads", () => {
    fc.assert(
      fc.property(
        damagedBatchBytes((batch) => CallBatch.encode(batch).finish()),
        (bytes) => {
          const expected = generated(bytes);
          // Damage inside a part the reader skips (a context) is the decoder's to refuse (see readBatchFacts), or,
          // when it is a nested length past its message's end, to misread: ingest's scan refuses such a call.
          if (expected !== "throws" && !misreadByDecoder(bytes)) expect(ours(bytes)).toEqual(expected);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it("leaves to ingest's scan a call whose integrations hold a length past its entry, which the decoder reads past (found by the property above)", () => {
    // An integrations entry's value claims 74 bytes of a 7-byte entry: the decoder reads on into the call's received_at.
    const bytes = Uint8Array.from([
      10, 2, 32, 32, 18, 3, 32, 32, 32, 26, 12, 8, 133, 203, 152, 130, 1, 16, 192, 186, 162, 128, 1, 34, 182, 1, 10, 3, 32, 32, 32, 18, 10,
      32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 26, 2, 32, 32, 42, 23, 10, 7, 10, 1, 49, 18, 2, 32, 0, 10, 12, 10, 6, 32, 32, 32, 32, 32, 32,
      18, 2, 8, 0, 50, 120, 10, 14, 10, 1, 49, 18, 9, 17, 0, 0, 0, 0, 0, 0, 0, 0, 10, 8, 10, 2, 49, 48, 18, 2, 8, 0, 10, 80, 10, 2, 32, 32,
      18, 74, 50, 72, 10, 56, 42, 54, 10, 7, 10, 1, 49, 18, 74, 8, 0, 10, 15, 10, 9, 95, 95, 112, 114, 111, 116, 111, 95, 95, 18, 2, 8, 0,
      10, 14, 10, 8, 32, 32, 32, 32, 32, 32, 32, 32, 18, 2, 8, 0, 10, 10, 10, 4, 32, 32, 32, 32, 18, 2, 32, 0, 10, 12, 26, 10, 32, 32, 32,
      32, 32, 32, 32, 32, 32, 32, 10, 10, 10, 4, 32, 32, 32, 32, 18, 2, 8, 0, 58, 12, 8, 237, 140, 238, 209, 14, 16, 192, 186, 162, 128, 1,
    ]);
    expect(generated(bytes)).not.toBe("throws");
    expect(misreadByDecoder(bytes)).toBe(true);
  });

  it("agrees with the decoder on a call whose timestamp's last varint runs past the timestamp (found by the property above)", () => {
    // The decoder reads the varint on into the call's next field, then stops reading the call: no payload.
    const bytes = Uint8Array.from([
      10, 2, 32, 32, 18, 5, 32, 32, 32, 32, 32, 26, 12, 8, 129, 192, 174, 234, 5, 16, 192, 186, 162, 128, 1, 34, 74, 10, 6, 32, 32, 32, 32,
      32, 32, 26, 2, 32, 32, 34, 13, 8, 242, 142, 134, 182, 128, 1, 16, 192, 186, 162, 128, 128, 50, 0, 58, 13, 8, 131, 145, 149, 231, 170,
      1, 16, 192, 186, 162, 128, 1, 114, 28, 10, 2, 32, 32, 18, 22, 10, 7, 10, 1, 32, 18, 2, 32, 0, 10, 11, 10, 5, 32, 32, 32, 32, 32, 18,
      2, 8, 0, 34, 87, 10, 1, 32, 18, 1, 32, 26, 9, 32, 32, 32, 32, 32, 32, 32, 32, 32, 34, 22, 8, 255, 255, 255, 255, 255, 255, 255, 255,
      255, 1, 16, 192, 251, 194, 255, 255, 255, 255, 255, 255, 1, 42, 17, 10, 15, 10, 9, 95, 95, 112, 114, 111, 116, 111, 95, 95, 18, 2, 50,
      0, 50, 8, 10, 6, 18, 4, 26, 2, 32, 32, 58, 12, 8, 223, 224, 177, 242, 162, 2, 16, 192, 141, 183, 1, 130, 1, 0,
    ]);
    expect(ours(bytes)).toEqual(generated(bytes));
    expect((generated(bytes) as { calls: { type: unknown }[] }).calls[0]!.type).toBeUndefined();
  });

  it("keeps a repeated key once, with its last value's type, and leaves out an entry without a value", () => {
    // properties {"a": 1, "b": "x", "a": true} written by hand: the encoder writes each key once.
    const entry = (key: string, value: Uint8Array | undefined) => {
      const keyBytes = Buffer.from(key);
      const parts = [Buffer.from([0x0a, keyBytes.length]), keyBytes];
      if (value) parts.push(Buffer.from([0x12, value.length]), Buffer.from(value));
      const body = Buffer.concat(parts);
      return Buffer.concat([Buffer.from([0x0a, body.length]), body]);
    };
    const number = Buffer.from([0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
    const string = Buffer.from([0x1a, 1, 0x78]);
    const bool = Buffer.from([0x20, 1]);
    const struct = Buffer.concat([entry("a", number), entry("b", string), entry("gone", undefined), entry("a", bool)]);
    const track = Buffer.concat([Buffer.from([0x0a, 2]), Buffer.from("Ev"), Buffer.from([0x12, struct.length]), struct]);
    const call = Buffer.concat([Buffer.from([0x5a, track.length]), track]);
    const batch = Buffer.concat([Buffer.from([0x22, call.length]), call]);
    const facts = readBatchFacts(batch);
    expect(facts.keys).toEqual(["a", "b"]);
    expect(facts.keyTypes).toEqual(["boolean", "string"]);
    expect(summary(facts)).toEqual(generated(batch));

    // The same in a Struct wide enough to be looked up by key: k3 again after 20 keys, and k19 again at once.
    const wide = Buffer.concat([
      ...Array.from({ length: 20 }, (_, index) => entry(`k${index}`, number)),
      entry("k3", bool),
      entry("k19", string),
      entry("k20", number),
    ]);
    // Lengths over 127 take two varint bytes.
    const field = (tag: number, body: Buffer) => {
      const length = body.length < 128 ? [body.length] : [(body.length & 0x7f) | 0x80, body.length >> 7];
      return Buffer.concat([Buffer.from([tag, ...length]), body]);
    };
    const wideBatch = field(0x22, field(0x5a, Buffer.concat([Buffer.from([0x0a, 2]), Buffer.from("Ev"), field(0x12, wide)])));
    const wideFacts = readBatchFacts(wideBatch);
    expect(wideFacts.keys).toEqual(Array.from({ length: 21 }, (_, index) => `k${index}`));
    expect(wideFacts.keyTypes[3]).toBe("boolean");
    expect(wideFacts.keyTypes[19]).toBe("string");
    expect(summary(wideFacts)).toEqual(generated(wideBatch));
  });

  it("gives each key its own text when many keys share the cache's slots", () => {
    // 20,000 distinct keys, many with the same length and similar bytes: far more than the cache's slots.
    const properties = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i.toString(36)}\u00e9`, i]));
    const call: Call = makeCall({ messageId: "m", userId: "u", payload: { $case: "track", value: { event: "Wide", properties } } });
    const bytes = CallBatch.encode({ batchId: "b", sourceId: "s", receivedAt: undefined, calls: [call, call] }).finish();
    const facts = readBatchFacts(bytes);
    expect(facts.keys.slice(0, 20_000)).toEqual(Object.keys(properties));
    expect(facts.keys.slice(20_000)).toEqual(Object.keys(properties));
  });

  it("reads a batch ingest publishes: names, keys and types, the call's own received_at, without the decoder", () => {
    const receivedAt = new Date("2026-03-01T10:00:00.123Z");
    const call = (payload: Call["payload"]): Call =>
      makeCall({ messageId: "m", userId: "u", timestamp: receivedAt, context: { ip: "1.2.3.4" }, receivedAt, payload });
    const bytes = CallBatch.encode({
      batchId: "b",
      sourceId: "web",
      receivedAt,
      calls: [
        call({
          $case: "track",
          value: { event: "Signed Up", properties: { plan: "pro", seats: 3, trial: false, tags: [], meta: {}, gone: null } },
        }),
        call({ $case: "page", value: { name: "", category: "Docs", properties: undefined } }),
        call({ $case: "identify", value: { traits: { email: "u@example.com" } } }),
        call({ $case: "alias", value: { previousId: "old" } }),
      ],
    }).finish();
    const facts = readBatchFacts(bytes);
    // Every field plainly encoded: read in one pass. (A timestamp once read from its length byte
    // sent every batch with a timestamp to the decoder, at several times the cost, with the same facts.)
    expect(facts.decodedWhole).toBe(false);
    expect(facts.sourceId).toBe("web");
    expect(facts.types).toEqual(["track", "page", "identify", "alias"]);
    expect(facts.names).toEqual(["Signed Up", "", "", ""]);
    expect(facts.receivedAt).toEqual([receivedAt.getTime(), receivedAt.getTime(), receivedAt.getTime(), receivedAt.getTime()]);
    expect(facts.keyStarts).toEqual([0, 6, 6, 7, 7]);
    expect(facts.keyTypes.slice(0, 6)).toEqual(["string", "number", "boolean", "array", "object", "null"]);
    expect(facts.keys[6]).toBe("email");
  });
});
