import { describe, expect, it } from "vitest";
import {
  draftOfMapping,
  headerValueKey,
  mappingKeys,
  mappingOf,
  newMapping,
  placeTestProblems,
  valueText,
  type MappingDraft,
} from "../web/pages/destinations/actions-draft.js";

/** The mapping editor's drafts (pure logic of services/console/web/pages/destinations/actions-draft.ts). */
describe("Webhooks (Actions) mapping drafts", () => {
  const read = {
    name: "Orders",
    enabled: true,
    trigger: 'type = "track" and event = "Order Completed"',
    url: { "@template": "https://hooks.example/{{userId}}" },
    method: "PUT",
    headers: { Authorization: "[set:hmac:0123abcd]", "X-User": { "@path": "$.userId" } },
    data: { order: { "@path": "$.properties" } },
    batching: { enabled: true, size: 0, maxWaitMs: 250 },
  };

  it("reads a mapping as text to edit, and writes it back as it was read", () => {
    const draft = draftOfMapping(read);
    expect(draft).toMatchObject({
      name: "Orders",
      url: '{"@template":"https://hooks.example/{{userId}}"}',
      method: "PUT",
      headers: [
        { name: "Authorization", value: "[set:hmac:0123abcd]" },
        { name: "X-User", value: '{"@path":"$.userId"}' },
      ],
      batching: true,
      // 0 is the service's default, shown as what it is.
      batchSize: "1000",
      batchMaxWaitMs: "250",
    });
    const { mapping, problems } = mappingOf(draft);
    expect(problems.size).toBe(0);
    // Masked header values go back as they were read: the service puts the stored values back.
    expect(mapping).toEqual({ ...read, batching: { enabled: true, size: 1000, maxWaitMs: 250 } });
  });

  it("leaves out what is empty: no headers, the whole call as data, one request per call", () => {
    const draft: MappingDraft = { ...newMapping([]), url: "https://hooks.example/all" };
    expect(mappingOf(draft)).toEqual({
      mapping: { name: "Mapping 1", enabled: true, trigger: 'type = "track"', url: "https://hooks.example/all", method: "POST" },
      problems: new Map(),
    });
    expect(draftOfMapping({ name: "x", url: "https://a.example" })).toMatchObject({
      data: "",
      headers: [],
      batching: false,
      method: "POST",
    });
    // New mappings get names of their own.
    expect(newMapping([draft, { ...draft, name: "Mapping 2" }]).name).toBe("Mapping 3");
  });

  it("refuses JSON that does not parse, naming the field, and headers it could not send apart", () => {
    const draft: MappingDraft = {
      ...newMapping([]),
      url: '{"@template": "https://x/{{userId}}"',
      headers: [
        { name: "X-A", value: "{not json" },
        { name: "x-a", value: "again" },
      ],
      data: "[1, 2]",
      batching: true,
      batchSize: "many",
      batchMaxWaitMs: "",
    };
    const { problems } = mappingOf(draft);
    expect(problems.get("url")).toMatch(/^The URL starts with \{ but is not valid JSON: /);
    expect(problems.get(headerValueKey("X-A"))).toMatch(/^The value of X-A starts with \{ but is not valid JSON: /);
    expect(problems.get("headers")).toBe("the header x-a is listed twice");
    expect(problems.get("data")).toMatch(/^Data must be a JSON object/);
    expect(problems.get("batching.size")).toBe("must be a whole number of calls, 1-4000");
    // Empty is the service's default.
    expect(problems.has("batching.maxWaitMs")).toBe(false);
    expect(mappingOf({ ...draft, data: "{oops" }).problems.get("data")).toMatch(/^Data is not valid JSON: /);
    expect(mappingOf({ ...newMapping([]), headers: [{ name: " ", value: "v" }] }).problems.get("headers")).toBe(
      "a header with a value needs a name",
    );
  });

  it("places a test's problems at the mapping's fields, the call's with the test call", () => {
    const draft = draftOfMapping(read);
    const keys = new Set(mappingKeys(draft, 1));
    for (const key of ["mappings.1", "mappings.1.trigger", "mappings.1.batching.maxWaitMs", "mappings.1.headers.X-User"])
      expect(keys.has(key)).toBe(true);

    const problems = [
      { field: "mapping.trigger", message: "expects a value after = (line 1, column 7)" },
      { field: "mapping.headers.Authorization", message: "is a masked value" },
      { field: "call.userId", message: "must be a string" },
      { field: "mapping.somewhere.else", message: "odd" },
      { field: "", message: "no field named" },
    ];
    expect(placeTestProblems(problems, 1, keys)).toEqual({
      byField: new Map([
        ["mappings.1.trigger", "expects a value after = (line 1, column 7)"],
        ["mappings.1.headers.Authorization", "is a masked value"],
      ]),
      call: ["userId: must be a string"],
      other: ["mapping.somewhere.else: odd", "no field named"],
    });
    expect(valueText(undefined)).toBe("");
    expect(valueText("https://a.example/?k=[set:hmac:0123abcd]")).toBe("https://a.example/?k=[set:hmac:0123abcd]");
  });
});
