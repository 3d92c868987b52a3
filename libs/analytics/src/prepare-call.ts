import { randomUUID } from "node:crypto";
import { checkCall, tooDeeplyNestedField, type ValidCall } from "@switchyard/calls";
import { encodeCall } from "./call-encoder.js";
import { ValidationError } from "./errors.js";
import type { CallType } from "./messages.js";
import { ProtoWriter } from "./proto-writer.js";
import { LIBRARY } from "./version.js";

/** A call that passed the rules, encoded and ready to queue. */
export interface PreparedCall {
  messageId: string;
  /** The switchyard.v1.Call bytes. */
  bytes: Buffer;
  /** The UTF-8 size of the call's JSON: what the 32 KB and 500 KB limits are measured on. */
  jsonBytes: number;
}

// One writer for every call: a call is written into it and then copied out at its exact size.
const writer = new ProtoWriter(64 * 1024);

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
  const context = fields.context;
  if (context === undefined) raw.context = { library: LIBRARY };
  else if (context !== null && typeof context === "object" && !Array.isArray(context)) raw.context = { ...context, library: LIBRARY };

  let json: string;
  try {
    json = JSON.stringify(raw);
  } catch (error) {
    // BigInt values and circular objects: JSON cannot write them, so neither can the client.
    throw new ValidationError("", "type", `call: cannot be written as JSON: ${(error as Error).message} (rule: type)`);
  }
  const jsonBytes = Buffer.byteLength(json, "utf8");
  const check = checkCall(raw, 0, jsonBytes);
  if (!check.ok) {
    const { field, rule, message: text } = check.rejection;
    throw new ValidationError(field, rule, `${text} (rule: ${rule})`);
  }
  const call = check.call as ValidCall & { messageId: string };
  const deepField = tooDeeplyNestedField(call);
  if (deepField !== undefined) {
    throw new ValidationError(deepField, "max_depth", `${deepField}: is nested too deeply to be stored (rule: max_depth)`);
  }
  writer.reset();
  encodeCall(writer, call);
  return { messageId: call.messageId, bytes: writer.copy(), jsonBytes };
}

function isoTimestamp(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new ValidationError("timestamp", "format", "timestamp: must be a valid date (rule: format)");
  return date.toISOString();
}
