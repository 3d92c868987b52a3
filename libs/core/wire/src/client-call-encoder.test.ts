import { CLIENT_FIELDS } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { callArbitrary, canonical } from "@switchyard/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeCall, messageIdOf, NestedTooDeeply, type CallFields, type ClientCallType } from "./client-call-encoder.js";
import { ProtoWriter, Unrepresentable } from "./writer.js";

/** A decoded call (text UTF-8 can carry) with a client's payload type and a messageId, and no accept time (ingest sets it). */
const clientCall = callArbitrary
  .filter((call) => call.payload !== undefined && call.payload.$case !== "delete")
  .map((call) => Call.decode(Call.encode({ ...call, messageId: call.messageId || "m", receivedAt: undefined }).finish()));

/** The call as the encoder takes it: the type apart, the payload's fields beside the common ones. */
function fieldsOf(call: Call): { type: ClientCallType; fields: CallFields } {
  const payload = call.payload!;
  const own = call as unknown as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  // Every own text but messageId (given apart) and every own Struct; the timestamps are given apart or set by ingest.
  for (const { key, kind } of CLIENT_FIELDS) if (key !== "messageId" && kind !== "timestamp") fields[key] = own[key];
  Object.assign(fields, payload.value);
  return { type: payload.$case as ClientCallType, fields: fields as CallFields };
}

describe("encodeCall", () => {
  it("writes a call the generated decoder reads back as the same call, keys in the same order", () => {
    const writer = new ProtoWriter(64);
    fc.assert(
      fc.property(clientCall, (call) => {
        const { type, fields } = fieldsOf(call);
        writer.reset();
        try {
          encodeCall(writer, type, call.messageId, fields, call.timestamp?.getTime());
        } catch (error) {
          // Values the call rules refuse (non-finite numbers) and nesting past the decoders' limit.
          if (error instanceof Unrepresentable || error instanceof NestedTooDeeply) return;
          throw error;
        }
        const bytes = writer.copy();
        // The same bytes as the generated encoder's, empty map keys (left out) included.
        expect(bytes.toString("hex")).toBe(Buffer.from(Call.encode(call).finish()).toString("hex"));
        const decoded = Call.decode(bytes);
        expect(canonical(decoded)).toBe(canonical(call));
        expect(JSON.stringify(decoded)).toBe(JSON.stringify(call));
        expect(messageIdOf(bytes)).toBe(call.messageId);
      }),
      { numRuns: 1_000 },
    );
  });

  it("refuses values JSON or the bus cannot carry, naming the rule", () => {
    const writer = new ProtoWriter(64);
    const refusal = (properties: object) => {
      writer.reset();
      try {
        encodeCall(writer, "track", "m", { userId: "u", event: "E", properties }, undefined);
      } catch (error) {
        return error instanceof Unrepresentable ? error.rule : error;
      }
      return undefined;
    };
    expect(refusal({ n: Number.NaN })).toBe("finite_number");
    expect(refusal({ s: "é\ud800" })).toBe("unicode");
    expect(refusal({ b: 1n })).toBe("bigint");
  });
});
