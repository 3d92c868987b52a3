import type { ValidCall } from "./call-schema.js";

/**
 * The deepest protobuf messages may nest: the generated decoders refuse
 * anything deeper, so a call nested deeper could be stored but never read back.
 */
export const MAX_MESSAGE_LEVEL = 100;

/**
 * The free-form field of a call whose google.protobuf.Struct encoding would
 * nest messages deeper than the decoders accept, or undefined. Levels count
 * as the decoders do for a call inside a CallBatch: the batch is level 1, the
 * call 2, `context`/`integrations` 3, a payload's `properties`/`traits` 4, and
 * each object member two more (entry, value), each list item two more (list, value).
 */
export function tooDeeplyNestedField(call: ValidCall): string | undefined {
  const roots: [string, unknown, number][] = [
    ["context", call.context, 3],
    ["integrations", call.integrations, 3],
    ["properties", "properties" in call ? call.properties : undefined, 4],
    ["traits", "traits" in call ? call.traits : undefined, 4],
  ];
  for (const [field, value, level] of roots) {
    // Only objects become Structs: anything else here is a member the call's type does not have
    // (`traits: null` on a track call), which the rules let through and the bus never stores.
    if (value !== null && typeof value === "object" && !structFits(value as Record<string, unknown>, level)) return field;
  }
  return undefined;
}

function structFits(struct: Record<string, unknown>, level: number): boolean {
  if (level > MAX_MESSAGE_LEVEL) return false;
  for (const value of Object.values(struct)) if (!valueFitsAtLevel(value, level + 2)) return false;
  return true;
}

/**
 * Whether a value of a free-form field, standing at `level` (counted as above), fits: what
 * tooDeeplyNestedField checks for each value. For an encoder that checks the levels as it writes
 * and meets a value it does not write as it is (a Date, written as its toJSON() text).
 */
export function valueFitsAtLevel(value: unknown, level: number): boolean {
  if (level > MAX_MESSAGE_LEVEL) return false;
  if (Array.isArray(value)) {
    if (level + 1 > MAX_MESSAGE_LEVEL) return false;
    return value.every((item) => valueFitsAtLevel(item, level + 2));
  }
  if (value !== null && typeof value === "object") return structFits(value as Record<string, unknown>, level + 1);
  return true;
}
