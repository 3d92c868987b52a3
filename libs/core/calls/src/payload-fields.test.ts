import { Alias, CallField, Delete, Group, Identify, Page, Screen, Track } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import { PAYLOAD_RULES, payloadTextsOf, type CallKind } from "./call-rules.js";
import {
  callPayloadField,
  constantNameOf,
  PAYLOAD_FIELD_NUMBERS,
  payloadFieldNumber,
  propertyNameOf,
  type PayloadCase,
} from "./payload-fields.js";

/** Each payload message's generated code: its empty message shows every field, "" for a text, undefined for a Struct. */
const MESSAGES: { readonly [T in PayloadCase]: { fromPartial(object: object): object } } = {
  identify: Identify,
  track: Track,
  page: Page,
  screen: Screen,
  group: Group,
  alias: Alias,
  delete: Delete,
};
const CASES = Object.keys(PAYLOAD_FIELD_NUMBERS) as PayloadCase[];

/** What PAYLOAD_RULES says a payload holds: its texts and its object ("delete" holds nothing). */
function tableFields(type: PayloadCase): { texts: readonly string[]; object: string | undefined } {
  if (type === "delete") return { texts: [], object: undefined };
  const rule = PAYLOAD_RULES[type as CallKind];
  return { texts: payloadTextsOf(rule), object: rule.object };
}

describe("the name mapping", () => {
  it("turns property names into generated constant names and back", () => {
    expect(constantNameOf("previousId")).toBe("PREVIOUS_ID");
    expect(constantNameOf("name")).toBe("NAME");
    expect(propertyNameOf("PREVIOUS_ID")).toBe("previousId");
    expect(propertyNameOf("GROUP_ID")).toBe("groupId");
    for (const type of CASES) {
      for (const constant of Object.keys(PAYLOAD_FIELD_NUMBERS[type])) expect(constantNameOf(propertyNameOf(constant))).toBe(constant);
    }
  });

  it("refuses a name proto/ lacks, naming the field and the generated constant", () => {
    expect(() => payloadFieldNumber("page", "pageUrl")).toThrow(/^page\.pageUrl: .*PageField\.PAGE_URL/);
  });

  it("finds each payload's own number in Call", () => {
    expect(callPayloadField("group")).toBe(CallField.GROUP);
    for (const type of CASES) expect(callPayloadField(type)).toBe(CallField[constantNameOf(type) as keyof typeof CallField]);
    expect(new Set(CASES.map(callPayloadField)).size).toBe(CASES.length);
  });
});

// PAYLOAD_RULES is the one hand-written table of payload fields: a .proto change without a table change fails here.
describe.each(CASES)("PAYLOAD_RULES and proto/: %s", (type) => {
  const { texts, object } = tableFields(type);
  const numbers = PAYLOAD_FIELD_NUMBERS[type];

  it("names only fields that have a generated number", () => {
    for (const key of [...texts, ...(object === undefined ? [] : [object])]) expect(() => payloadFieldNumber(type, key)).not.toThrow();
  });

  it("names every generated field of the payload", () => {
    const generated = Object.keys(numbers).map(propertyNameOf).sort();
    expect([...texts, ...(object === undefined ? [] : [object])].sort()).toEqual(generated);
  });

  it("agrees with the generated message on which fields are text and which the Struct", () => {
    const empty = MESSAGES[type].fromPartial({}) as Record<string, unknown>;
    expect(Object.keys(empty).sort()).toEqual(Object.keys(numbers).map(propertyNameOf).sort());
    for (const key of texts) expect(empty[key], `${type}.${key} is a string in the .proto`).toBe("");
    if (object !== undefined) expect(empty[object], `${type}.${object} is a google.protobuf.Struct in the .proto`).toBeUndefined();
  });

  it("has its required field first in number order (the scan's quick rules read it there)", () => {
    if (type === "delete") return;
    const required = PAYLOAD_RULES[type as CallKind].required;
    if (!required) return;
    const first = Math.min(...texts.map((key) => payloadFieldNumber(type, key)));
    expect(payloadFieldNumber(type, required.field)).toBe(first);
  });
});
