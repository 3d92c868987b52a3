import type { ActionMapping } from "@switchyard/contracts/json";
import { describe, expect, it } from "vitest";
import { compileActionMappings, type CompiledActionMapping } from "./action-mappings.js";
import { MAX_ACTION_MAPPINGS } from "./limits.js";

const ORDERS: ActionMapping = {
  name: "Orders",
  enabled: true,
  trigger: 'type = "track" and event = "Order Completed"',
  url: "https://hooks.example/orders",
  method: "POST",
  data: { order: { "@path": "$.properties" } },
  batching: { enabled: true, size: 100, maxWaitMs: 500 },
};

function compiled(mappings: ActionMapping[]): CompiledActionMapping[] {
  const result = compileActionMappings(mappings);
  if (!result.ok) throw new Error(result.problems.join("; "));
  return result.mappings;
}

describe("compileActionMappings", () => {
  it("compiles each mapping: its trigger, its request, its batching with defaults", () => {
    const [orders, identities] = compiled([
      ORDERS,
      { name: "Identities", enabled: true, trigger: 'type = "identify"', url: "https://hooks.example/ids", batching: { enabled: true } },
    ]);
    expect(orders!.trigger.matches({ type: "track", event: "Order Completed" })).toBe(true);
    expect(orders!.batching).toEqual({ size: 100, maxWaitMs: 500 });
    expect(identities!.batching).toEqual({ size: 1000, maxWaitMs: 1000 });
    const made = identities!.request({ type: "identify", userId: "u" });
    expect(made).toMatchObject({
      ok: true,
      request: { method: "POST", url: "https://hooks.example/ids", data: { type: "identify", userId: "u" } },
    });
  });

  it("names the mapping and the field of every problem", () => {
    expect(
      compileActionMappings([
        { ...ORDERS, name: "" },
        { ...ORDERS, trigger: "type =", url: "mailto:x@example.com", batching: { enabled: true, size: 5000, maxWaitMs: 5 } },
        { ...ORDERS, method: "DELETE", headers: { "Bad Name": "x" } },
      ]),
    ).toEqual({
      ok: false,
      problems: [
        "mappings.0.name: must be 1-100 characters",
        'mappings.1.trigger: expects a value after =: a "double-quoted" string, a number, null, true or false (line 1, column 7)',
        "mappings.1.url: is a mailto URL: only http and https are sent to",
        "mappings.1.batching.size: must be 1-4000 (0: 1000)",
        "mappings.1.batching.maxWaitMs: must be 10-60000 ms (0: 1000)",
        'mappings.2.name: "Orders" is the name of an earlier mapping',
        "mappings.2.method: must be one of POST, PUT, PATCH",
        "mappings.2.headers.Bad Name: is not an HTTP header name",
      ],
    });
    expect(compileActionMappings([])).toEqual({ ok: false, problems: [`mappings: give 1 to ${MAX_ACTION_MAPPINGS} mappings, not 0`] });
  });
});
