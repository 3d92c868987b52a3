import { isWellFormedText } from "./text-rules.js";

/** A value of a call that cannot be stored and delivered as it was sent. */
export interface ValueProblem {
  /** Path of the offending value (or, for a key, of the object holding it). */
  path: (string | number)[];
  /** Stable rule name: finite_number or unicode. */
  rule: "finite_number" | "unicode";
  /** What is wrong, without the field; never echoes the value. */
  message: string;
}

export const FINITE_NUMBER_MESSAGE = "must be a finite number";
export const LONE_SURROGATE_MESSAGE = "must be valid Unicode (lone surrogate)";
export const LONE_SURROGATE_KEY_MESSAGE = "keys must be valid Unicode (lone surrogate)";

/**
 * Deeper than any storable call (objects nest two protobuf levels each, and
 * the decoders stop at 100): past it the nesting rule refuses the call anyway,
 * and the walk stops instead of risking the stack.
 */
const MAX_WALK_DEPTH = 100;

/**
 * The first value in a free-form field (properties, traits, context,
 * integrations) that JSON and protobuf cannot carry unchanged: a number that
 * is not finite (JSON `1e309` parses to Infinity; a protobuf Value can hold
 * NaN and ±Infinity; both would be delivered as null), or a string or key
 * with a lone surrogate (UTF-8 has no encoding for one; it would be delivered
 * as U+FFFD). Undefined when there is none.
 */
export function unfaithfulValue(value: unknown, path: (string | number)[]): ValueProblem | undefined {
  const problem = walk(value, 0);
  if (problem) problem.path.unshift(...path);
  return problem;
}

// The path is built on the way back from a problem only: valid calls, nearly all, allocate nothing.
function walk(value: unknown, depth: number): ValueProblem | undefined {
  switch (typeof value) {
    case "string":
      return isWellFormedText(value) ? undefined : { path: [], rule: "unicode", message: LONE_SURROGATE_MESSAGE };
    case "number":
      return Number.isFinite(value) ? undefined : { path: [], rule: "finite_number", message: FINITE_NUMBER_MESSAGE };
    case "object":
      if (value === null || depth >= MAX_WALK_DEPTH) return undefined;
      if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index++) {
          const problem = walk(value[index], depth + 1);
          if (problem) {
            problem.path.unshift(index);
            return problem;
          }
        }
        return undefined;
      }
      for (const key in value) {
        if (!isWellFormedText(key)) return { path: [], rule: "unicode", message: LONE_SURROGATE_KEY_MESSAGE };
        const problem = walk((value as Record<string, unknown>)[key], depth + 1);
        if (problem) {
          problem.path.unshift(key);
          return problem;
        }
      }
      return undefined;
    default:
      return undefined;
  }
}
