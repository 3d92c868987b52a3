import { describe, expect, it } from "vitest";
import { PendingSchemaEntry } from "./records.js";

describe("PendingSchemaEntry.addKeys", () => {
  it("records every key and type of calls that repeat, change a type, add, drop or reorder keys", () => {
    const entry = new PendingSchemaEntry("k", "web", "track", "Signed Up", false);
    const calls: [string, "string" | "number" | "null" | "boolean"][][] = [
      [
        ["plan", "string"],
        ["seats", "number"],
      ],
      [
        ["plan", "string"],
        ["seats", "number"],
      ],
      [
        ["plan", "null"],
        ["seats", "number"],
      ],
      [["plan", "string"]],
      [
        ["seats", "number"],
        ["plan", "string"],
        ["trial", "boolean"],
      ],
      [
        ["seats", "number"],
        ["plan", "string"],
        ["trial", "boolean"],
      ],
    ];
    // As readBatchFacts lays them out: every call's keys in one array, each call a range of it.
    const keys = calls.flatMap((call) => call.map(([key]) => key));
    const types = calls.flatMap((call) => call.map(([, type]) => type));
    let start = 0;
    for (const call of calls) {
      entry.addKeys(keys, types, start, start + call.length);
      start += call.length;
    }
    expect(Object.fromEntries([...entry.keys].map(([key, seen]) => [key, [...seen].sort()]))).toEqual({
      plan: ["null", "string"],
      seats: ["number"],
      trial: ["boolean"],
    });
  });
});
