import { compile, type z } from "zod";
import { callSchema, type ValidCall } from "./call-schema.js";
import { MAX_CALL_BYTES, MAX_ID_LENGTH } from "./limits.js";

/** Why a call was refused: where it was, which field, which rule. */
export interface Rejection {
  index: number;
  messageId: string;
  /** JSON path of the offending field ("" for the call as a whole). */
  field: string;
  /**
   * Stable rule name: required, type, not_empty, max_length, format, max_size, max_depth,
   * identity_required, value, control_characters, finite_number, unicode, utf8 (gRPC), ...
   */
  rule: string;
  /** "<field>: <what is wrong>", safe to show to the sender (never echoes values). */
  message: string;
}

/**
 * The same rules, with zod's generated fast path for valid calls (ingest
 * checks every call, and most are valid). A call the fast path refuses
 * is parsed again by the ordinary parser, so refusals read the same; a schema
 * the compiler cannot model simply keeps the ordinary parser.
 */
const compiledCallSchema = compile(callSchema);

/** Every rule name checkCall refuses a call with ("invalid" only for an issue zod reports without one). */
export const CHECK_RULES: ReadonlySet<string> = new Set([
  "required",
  "type",
  "not_empty",
  "max_length",
  "format",
  "max_size",
  "max_depth",
  "identity_required",
  "value",
  "call_type",
  "control_characters",
  "finite_number",
  "unicode",
  "invalid",
]);

export type CallCheck = { ok: true; call: ValidCall } | { ok: false; rejection: Rejection };

/**
 * Checks one call in Segment JSON shape. `jsonBytes` is its JSON size when the
 * caller already knows it (HTTP); otherwise it is measured here.
 */
export function checkCall(raw: unknown, index: number, jsonBytes?: number): CallCheck {
  const messageId = messageIdOf(raw);
  const size = jsonBytes ?? jsonSize(raw);
  if (size === undefined) {
    // Nested thousands of levels deep (JSON.parse accepts that, JSON.stringify overflows the stack):
    // far beyond what can be stored (MAX_MESSAGE_LEVEL), so refused like any call nested too deeply.
    return {
      ok: false,
      rejection: { index, messageId, field: "", rule: "max_depth", message: "call: objects and lists are nested too deeply to store" },
    };
  }
  if (size > MAX_CALL_BYTES) {
    return {
      ok: false,
      rejection: {
        index,
        messageId,
        field: "",
        rule: "max_size",
        message: `call is ${size} bytes of JSON; the limit is ${MAX_CALL_BYTES} bytes (${MAX_CALL_BYTES / 1024} KB)`,
      },
    };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { ok: false, rejection: { index, messageId, field: "", rule: "type", message: "call: must be a JSON object" } };
  }
  const result = compiledCallSchema.safeParse(raw, { reportInput: true });
  if (result.success) return { ok: true, call: result.data };
  const issue = result.error.issues[0];
  return { ok: false, rejection: rejectionFrom(issue, index, messageId) };
}

function rejectionFrom(issue: z.core.$ZodIssue | undefined, index: number, messageId: string): Rejection {
  if (!issue) return { index, messageId, field: "", rule: "invalid", message: "call is invalid" };
  const field = issue.path.map(String).join(".");
  return { index, messageId, field, rule: ruleOf(issue), message: `${field || "call"}: ${issue.message}` };
}

function ruleOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined ? "required" : "type";
    case "invalid_union":
    case "invalid_value":
      return issue.path.join(".") === "type" ? "call_type" : "value";
    case "too_small":
      return "not_empty";
    case "too_big":
      return "max_length";
    case "invalid_format":
      return "format";
    case "custom": {
      const rule = (issue.params as { rule?: unknown } | undefined)?.rule;
      return typeof rule === "string" ? rule : issue.path.join(".") === "timestamp" ? "format" : "invalid";
    }
    default:
      return "invalid";
  }
}

/** UTF-8 size of the call's JSON, or undefined when it is nested too deeply to serialise. */
function jsonSize(raw: unknown): number | undefined {
  try {
    return Buffer.byteLength(JSON.stringify(raw) ?? "", "utf8");
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

function messageIdOf(raw: unknown): string {
  if (raw && typeof raw === "object" && "messageId" in raw && typeof raw.messageId === "string")
    return raw.messageId.slice(0, MAX_ID_LENGTH);
  return "";
}
