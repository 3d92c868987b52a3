import { CLIENT_TEXT_KEYS } from "@switchyard/calls";
import { Call, CallBatch } from "@switchyard/contracts";
import { callArbitrary } from "@switchyard/testkit";
import { webhookBody } from "@switchyard/wire";
import { callFilterSchema, FILTER_FIELD_NAMES, type CallFilter, type FilterValue } from "@switchyard/workspace";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callMatches } from "./call-filter.js";
import { outgoingCall, readOutgoingBatch } from "./outgoing-calls.js";

/*
 * The compiled filter, on a call's bytes, against an oracle: the filter's semantics (CallFilter
 * in proto/switchyard/v1/config.proto) applied to the webhook body of the decoded call as JSON.
 */

type Lookup = { found: false } | { found: true; value: unknown };

/** The call's webhook body as JSON, the alias's "Previous ID" and "User ID" by their property names; undefined without a body. */
function bodyOf(call: Call): Record<string, unknown> | undefined {
  if (!call.payload) return undefined;
  const body = JSON.parse(JSON.stringify(webhookBody(call))) as Record<string, unknown>;
  if (call.payload.$case === "alias") {
    body.previousId = body["Previous ID"];
    body.userId = body["User ID"];
  }
  // The call's own texts the body leaves out (a field added to calls.proto) are there when set.
  const own = call as unknown as Record<string, string>;
  for (const key of CLIENT_TEXT_KEYS) if (!Object.hasOwn(body, key) && own[key] !== "") body[key] = own[key];
  return body;
}

function lookup(body: Record<string, unknown> | undefined, path: string): Lookup {
  let value: unknown = body;
  for (const key of path.split(".")) {
    if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return { found: false };
    value = (value as Record<string, unknown>)[key];
  }
  return { found: true, value };
}

function oracle(filter: CallFilter, body: Record<string, unknown> | undefined): boolean {
  if ("all" in filter) return filter.all.filters.every((inner) => oracle(inner, body));
  if ("any" in filter) return filter.any.filters.some((inner) => oracle(inner, body));
  if ("not" in filter) return !oracle(filter.not, body);
  const condition = filter.field;
  const found = lookup(body, condition.path);
  const value = found.found ? found.value : undefined;
  const isNumber = found.found && typeof value === "number";
  const equal = (wanted: FilterValue) => found.found && value === wanted;
  if ("exists" in condition) return found.found === condition.exists;
  if ("equals" in condition) return equal(condition.equals);
  if ("notEquals" in condition) return !equal(condition.notEquals);
  if ("in" in condition) return condition.in.some(equal);
  if ("notIn" in condition) return !condition.notIn.some(equal);
  if ("greaterThan" in condition) return isNumber && (value as number) > condition.greaterThan;
  if ("greaterOrEqual" in condition) return isNumber && (value as number) >= condition.greaterOrEqual;
  if ("lessThan" in condition) return isNumber && (value as number) < condition.lessThan;
  if ("lessOrEqual" in condition) return isNumber && (value as number) <= condition.lessOrEqual;
  if (typeof value === "string") return value.includes(condition.contains);
  return Array.isArray(value) && value.includes(condition.contains);
}

/** Paths worth testing on a call: every first name, and the key paths of its objects. */
function pathsOf(call: Call): string[] {
  const paths = [...FILTER_FIELD_NAMES];
  const below = (prefix: string, value: unknown, depth: number) => {
    paths.push(`${prefix}.missing`);
    if (typeof value !== "object" || value === null || Array.isArray(value) || depth > 3) return;
    for (const [key, member] of Object.entries(value)) {
      if (key === "" || key.split(".").includes("")) continue;
      paths.push(`${prefix}.${key}`);
      below(`${prefix}.${key}`, member, depth + 1);
    }
  };
  const payload = call.payload?.value as Record<string, unknown> | undefined;
  below("properties", payload?.properties, 0);
  below("traits", payload?.traits, 0);
  below("context", call.context, 0);
  return paths;
}

/** Values worth comparing with: the call's own (so conditions match), and others. */
function valuesOf(call: Call): FilterValue[] {
  const values: FilterValue[] = [null, true, false, 0, 1, -1, 2.5, "", "a", "track", "identify"];
  const collect = (value: unknown, depth: number) => {
    if (value === null || typeof value === "boolean" || typeof value === "string") values.push(value);
    else if (typeof value === "number" && Number.isFinite(value)) values.push(value);
    else if (typeof value === "object" && depth < 4) for (const member of Object.values(value)) collect(member, depth + 1);
  };
  collect({ ...call, payload: call.payload?.value, type: call.payload?.$case }, 0);
  return values;
}

const TESTS = ["equals", "notEquals", "exists", "in", "notIn", "greaterThan", "greaterOrEqual", "lessThan", "lessOrEqual", "contains"];

function filterArbitrary(paths: string[], values: FilterValue[]): fc.Arbitrary<CallFilter> {
  const value = fc.constantFrom(...values);
  const number = fc.oneof(
    fc.constantFrom(...values.filter((v): v is number => typeof v === "number")),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );
  const text = fc.oneof(
    fc.constantFrom(...values.filter((v): v is string => typeof v === "string" && v !== "")),
    fc.string({ minLength: 1, maxLength: 2 }),
  );
  const field = fc.tuple(fc.constantFrom(...paths), fc.constantFrom(...TESTS)).chain(([path, test]) => {
    const tested: fc.Arbitrary<unknown> =
      test === "exists"
        ? fc.boolean()
        : test === "in" || test === "notIn"
          ? fc.array(value, { maxLength: 4 })
          : test === "contains"
            ? text
            : test === "equals" || test === "notEquals"
              ? value
              : number;
    return tested.map((wanted) => ({ field: { path, [test]: wanted } }) as CallFilter);
  });
  return fc.letrec<{ filter: CallFilter }>((tie) => ({
    filter: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      field,
      fc.array(tie("filter"), { maxLength: 3 }).map((filters) => ({ all: { filters } })),
      fc.array(tie("filter"), { maxLength: 3 }).map((filters) => ({ any: { filters } })),
      tie("filter").map((inner) => ({ not: inner })),
    ),
  })).filter;
}

describe("callMatches", () => {
  it("decides as the filter's semantics on the webhook body, from a batch's bytes and from a decoded call", () => {
    fc.assert(
      fc.property(
        callArbitrary.chain((generated) => {
          const call = Call.decode(Call.encode(generated).finish());
          return fc.tuple(fc.constant(call), filterArbitrary(pathsOf(call), valuesOf(call)));
        }),
        ([call, generatedFilter]) => {
          const parsed = callFilterSchema.safeParse(generatedFilter);
          fc.pre(parsed.success); // deeper or larger than the rules allow
          const filter = parsed.data!;
          const wanted = oracle(filter, bodyOf(call));
          const batch = CallBatch.encode({ batchId: "b", sourceId: "s", receivedAt: undefined, calls: [call] }).finish();
          expect(callMatches(filter, readOutgoingBatch(batch).calls[0]!), JSON.stringify(filter)).toBe(wanted);
          expect(callMatches(filter, outgoingCall(call)), JSON.stringify(filter)).toBe(wanted);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("matches the bench's realistic filter on a realistic track call", () => {
    const filter = callFilterSchema.parse({
      all: {
        filters: [
          { field: { path: "type", equals: "track" } },
          { field: { path: "properties.revenue", greaterThan: 0 } },
          { field: { path: "context.app.version", exists: true } },
        ],
      },
    });
    const call = Call.fromPartial({
      messageId: "m1",
      userId: "u1",
      context: { app: { name: "shop", version: "2.14.3" } },
      payload: { $case: "track", value: { event: "Order Completed", properties: { revenue: 12.5 } } },
    });
    expect(callMatches(filter, outgoingCall(call))).toBe(true);
    const free = Call.fromPartial({
      ...call,
      payload: { $case: "track", value: { event: "Order Completed", properties: { revenue: 0 } } },
    });
    expect(callMatches(filter, outgoingCall(free))).toBe(false);
  });
});
