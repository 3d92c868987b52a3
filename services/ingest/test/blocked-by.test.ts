import { Call } from "@switchyard/contracts";
import { AcceptTime } from "@switchyard/wire";
import { blockedCallSets, sourceBlocks } from "@switchyard/workspace";
import { describe, expect, it } from "vitest";
import { grpcCall, MalformedCall, WireCall } from "../src/grpc-calls.js";
import type { IncomingCall } from "../src/incoming-call.js";
import { JsonCall } from "../src/json-call.js";

/**
 * Each route a call takes through ingest (gRPC fast path, gRPC decoded, Segment JSON) tells
 * whether its source blocks it the same way as the workspace's rule, sourceBlocks.
 */

const source = { blocked: { types: ["page" as const], trackEvents: ["Noisy Event", "Ünïcode ✓"] } };
const blocks = blockedCallSets(source)!;

const CASES: { payload: Call["payload"]; json: Record<string, unknown> }[] = [
  { payload: { $case: "track", value: { event: "Noisy Event", properties: { a: 1 } } }, json: { type: "track", event: "Noisy Event" } },
  { payload: { $case: "track", value: { event: "Ünïcode ✓", properties: undefined } }, json: { type: "track", event: "Ünïcode ✓" } },
  { payload: { $case: "track", value: { event: "Signed Up", properties: undefined } }, json: { type: "track", event: "Signed Up" } },
  { payload: { $case: "page", value: { name: "Home", category: "", properties: undefined } }, json: { type: "page", name: "Home" } },
  {
    payload: { $case: "screen", value: { name: "Noisy Event", category: "", properties: undefined } },
    json: { type: "screen", name: "Noisy Event" },
  },
  { payload: { $case: "identify", value: { traits: undefined } }, json: { type: "identify" } },
];

function protoCall(payload: Call["payload"]): Call {
  return Call.fromPartial({ messageId: "m-1", userId: "user-1", payload });
}

function verdict(call: IncomingCall): boolean {
  const check = call.check(0, new AcceptTime(new Date()));
  expect(check.ok).toBe(true);
  return call.blockedBy(blocks);
}

describe("whether a call is blocked", () => {
  it.each(CASES)("agrees with the workspace rule on every route: %j", ({ payload, json }) => {
    const expected = sourceBlocks(source, json.type as string, json.event as string | undefined);
    const bytes = Buffer.from(Call.encode(protoCall(payload)).finish());
    const fast = grpcCall(bytes);
    expect(fast).toBeInstanceOf(WireCall);
    // The payload twice: irregular bytes, which take the decoded route.
    const decoded = grpcCall(Buffer.concat([bytes, bytes]));
    expect(decoded).toBeInstanceOf(JsonCall);
    const segment = new JsonCall({ ...json, userId: "user-1", messageId: "m-1" });
    expect([verdict(fast), verdict(decoded), verdict(segment)]).toEqual([expected, expected, expected]);
  });

  it("the expected verdicts: by type, and track calls by exact event name", () => {
    expect(CASES.map(({ json }) => sourceBlocks(source, json.type as string, json.event as string | undefined))).toEqual([
      true,
      true,
      false,
      true,
      false,
      false,
    ]);
  });

  it("a source without blocks, or with empty lists, has no sets to look in; a malformed call is never blocked", () => {
    expect(blockedCallSets({})).toBeUndefined();
    expect(blockedCallSets({ blocked: { types: [], trackEvents: [] } })).toBeUndefined();
    // Made once per record, so a request pays a look-up, not a build.
    expect(blockedCallSets(source)).toBe(blocks);
    expect(new MalformedCall("bad", 3).blockedBy()).toBe(false);
  });
});
