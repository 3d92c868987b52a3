import { CALL_TYPES } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import { PAYLOAD_RULES, type CallKind } from "./call-rules.js";
import { MAX_ID_LENGTH } from "./limits.js";
import { checkCall } from "./validate.js";

const KINDS = Object.keys(PAYLOAD_RULES) as CallKind[];

/** The smallest call of a kind that the table says is valid. */
function smallest(type: CallKind): Record<string, unknown> {
  const rule = PAYLOAD_RULES[type];
  return { type, userId: "u", ...(rule.required ? { [rule.required.field]: "x" } : {}) };
}

function refusal(raw: Record<string, unknown>): { field: string; rule: string } {
  const check = checkCall(raw, 0);
  if (check.ok) throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
  return { field: check.rejection.field, rule: check.rejection.rule };
}

const OPTIONAL_TEXTS = [...new Set(KINDS.flatMap((type): readonly string[] => PAYLOAD_RULES[type].texts))];
const OBJECTS = [...new Set(KINDS.flatMap((type) => PAYLOAD_RULES[type].object ?? []))];

// The table the fast checks read, held to the zod schema it shadows, kind by kind.
describe.each(KINDS)("PAYLOAD_RULES.%s and the schema", (type) => {
  const rule = PAYLOAD_RULES[type];

  it("accept its smallest call", () => {
    expect(checkCall(smallest(type), 0).ok).toBe(true);
  });

  it("agree on the identity it needs", () => {
    const { userId: _userId, ...withoutUser } = smallest(type);
    const anonymousOnly = { ...withoutUser, anonymousId: "a" };
    if (rule.identity === "userId") {
      expect(refusal(anonymousOnly)).toEqual({ field: "userId", rule: "required" });
    } else {
      expect(checkCall(anonymousOnly, 0).ok).toBe(true);
      expect(refusal(withoutUser)).toEqual({ field: "userId", rule: "identity_required" });
    }
  });

  it("agree on its required field", () => {
    const required = rule.required;
    if (!required) return;
    const { [required.field]: _value, ...without } = smallest(type);
    expect(refusal(without)).toEqual({ field: required.field, rule: "required" });
    expect(refusal({ ...without, [required.field]: "" })).toEqual({ field: required.field, rule: "not_empty" });
    const long = { ...without, [required.field]: "x".repeat(MAX_ID_LENGTH + 1) };
    if (required.kind === "id") expect(refusal(long)).toEqual({ field: required.field, rule: "max_length" });
    else expect(checkCall(long, 0).ok).toBe(true);
  });

  it("agree on its optional texts and object, and ignore those of other kinds", () => {
    for (const text of OPTIONAL_TEXTS) {
      const raw = { ...smallest(type), [text]: 5 };
      if ((rule.texts as readonly string[]).includes(text)) expect(refusal(raw)).toEqual({ field: text, rule: "type" });
      else expect(checkCall(raw, 0).ok).toBe(true);
    }
    for (const object of OBJECTS) {
      const raw = { ...smallest(type), [object]: [] };
      if (rule.object === object) expect(refusal(raw)).toEqual({ field: object, rule: "type" });
      else expect(checkCall(raw, 0).ok).toBe(true);
    }
  });
});

describe("PAYLOAD_RULES", () => {
  it("has a rule for every kind of call, and for nothing else", () => {
    expect(KINDS).toEqual([...CALL_TYPES]);
    expect(refusal({ type: "delete", userId: "u" })).toEqual({ field: "type", rule: "call_type" });
  });
});
