import { randomUUID } from "node:crypto";
import { checkCall, MAX_CALL_BYTES, tooDeeplyNestedField, type ValidCall } from "@switchyard/calls";
import { encodeCall } from "./call-encoder.js";
import { ValidationError } from "./errors.js";
import type { CallType } from "./messages.js";
import { ProtoWriter } from "./proto-writer.js";
import { quickAccept } from "./quick-accept.js";
import { LIBRARY } from "./version.js";

/** A call that passed the rules, encoded and ready to queue. */
export interface PreparedCall {
  messageId: string;
  /** The switchyard.v1.Call bytes: chunk[offset, offset + length). */
  chunk: Buffer;
  offset: number;
  length: number;
  /** The UTF-8 size of the call's JSON: what the 32 KB and 500 KB limits are measured on. */
  jsonBytes: number;
}

// One writer for every call, writing them one after the other into 256 KB chunks where they stay
// while queued: no buffer object per call. A chunk is freed once none of its calls is held.
const writer = new ProtoWriter(256 * 1024);

/**
 * Checks a message by the same rules ingest applies (@switchyard/calls), adds
 * messageId and context.library, and encodes it. Throws ValidationError
 * naming the field and the rule; the message is then not queued.
 */
export function prepareCall(type: CallType, message: unknown): PreparedCall {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new ValidationError("", "type", `${type}: the message must be an object (rule: type)`);
  }
  const fields = message as Record<string, unknown>;
  const raw: Record<string, unknown> = { ...fields, type, messageId: fields.messageId ?? randomUUID() };
  if (fields.timestamp instanceof Date) raw.timestamp = isoTimestamp(fields.timestamp);

  // The rules (or their shortcut) first, the size last: the encoder measures the JSON size as it
  // writes, without building any JSON text.
  const call = (quickAccept(raw) ? raw : checkedCall(raw)) as ValidCall & { messageId: string };
  // Also stops circular objects before the encoder would follow them forever.
  const deepField = tooDeeplyNestedField(call);
  if (deepField !== undefined) {
    throw new ValidationError(deepField, "max_depth", `${deepField}: is nested too deeply to be stored (rule: max_depth)`);
  }
  writer.discard(); // whatever a call that failed half-way (a BigInt) left behind
  // context.library is added by the encoder, so the caller's context is never copied.
  const jsonBytes = encodeCall(writer, call, LIBRARY);
  if (jsonBytes > MAX_CALL_BYTES) {
    writer.discard();
    throw new ValidationError(
      "",
      "max_size",
      `call is ${jsonBytes} bytes of JSON; the limit is ${MAX_CALL_BYTES} bytes (32 KB) (rule: max_size)`,
    );
  }
  const { chunk, offset, length } = writer.take();
  return { messageId: call.messageId, chunk, offset, length, jsonBytes };
}

/** The call as the rules return it, or the ValidationError naming the field and the rule it breaks. */
function checkedCall(raw: Record<string, unknown>): ValidCall {
  const check = checkCall(raw, 0, 0);
  if (check.ok) return check.call;
  const { field, rule, message } = check.rejection;
  throw new ValidationError(field, rule, `${message} (rule: ${rule})`);
}

function isoTimestamp(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new ValidationError("timestamp", "format", "timestamp: must be a valid date (rule: format)");
  return date.toISOString();
}
