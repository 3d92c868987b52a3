import type { Call } from "@switchyard/contracts";
import type { ValidCall } from "./call-schema.js";
import { CALL_KINDS, PAYLOAD_RULES, payloadTextsOf, type CallKind, type PayloadRule } from "./call-rules.js";
import { CLIENT_FIELDS, COMMON_FIELDS } from "./common-fields.js";
import { isoText } from "./iso-text.js";

/** Each kind's payload fields, from PAYLOAD_RULES once at load: its texts (required first), then its object. */
const PAYLOAD_FIELDS = Object.fromEntries(
  CALL_KINDS.map((type) => [
    type,
    { texts: payloadTextsOf(PAYLOAD_RULES[type]), object: PAYLOAD_RULES[type].object as string | undefined },
  ]),
) as Record<CallKind, { readonly texts: readonly string[]; readonly object: string | undefined }>;

/**
 * A gRPC call in Segment JSON shape, so it can be checked by the same rules
 * as HTTP calls. Empty proto3 strings mean "not set".
 */
export function protoCallToJson(call: Call): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  if (call.payload) json.type = call.payload.$case;
  const fields = call as unknown as Record<string, unknown>;
  for (let index = 0; index < CLIENT_FIELDS.length; index++) {
    const { key, kind } = CLIENT_FIELDS[index]!;
    const value = fields[key];
    if (kind === "text") setText(json, key, value as string);
    // A protobuf Timestamp can hold seconds far outside the range of a JS Date (±8.64e15 ms). Such a Date is
    // invalid, and its text "Invalid Date" is refused by the timestamp rule ("format") like any other non-date.
    else if (kind === "timestamp") {
      if (value) json[key] = isoText(value as Date);
    } else if (value) json[key] = value;
  }
  const payload = call.payload;
  if (payload !== undefined && payload.$case !== "delete") {
    const value = payload.value as unknown as Record<string, unknown>;
    const { texts, object } = PAYLOAD_FIELDS[payload.$case];
    for (let index = 0; index < texts.length; index++) setText(json, texts[index]!, value[texts[index]!] as string);
    if (object !== undefined && value[object]) json[object] = value[object];
  }
  return json;
}

function setText(json: Record<string, unknown>, key: string, value: string): void {
  if (value !== "") json[key] = value;
}

/** What ingest adds to a valid call. */
export interface Enrichment {
  messageId: string;
  receivedAt: Date;
}

/**
 * The protobuf Call that goes on the bus: the client's fields plus
 * messageId, receivedAt, and timestamp (the client's for historical imports,
 * otherwise the accept time); every common field from the Call model.
 */
export function validCallToProto(call: ValidCall, enrichment: Enrichment): Call {
  const fields = call as Record<string, unknown>;
  const base: Record<string, unknown> = {};
  for (let index = 0; index < COMMON_FIELDS.length; index++) {
    const { key, kind } = COMMON_FIELDS[index]!;
    const value = fields[key];
    // An unset text is proto3's "".
    base[key] =
      kind === "text" ? (value ?? "") : kind === "timestamp" ? (value === undefined ? undefined : new Date(value as string)) : value;
  }
  base.messageId = call.messageId ?? enrichment.messageId;
  base.timestamp ??= enrichment.receivedAt;
  base.receivedAt = enrichment.receivedAt;
  const rule: PayloadRule = PAYLOAD_RULES[call.type];
  const value: Record<string, unknown> = {};
  // An unset optional text is proto3's "" (the required one is set: the rules checked).
  if (rule.required) value[rule.required.field] = fields[rule.required.field];
  for (const text of rule.texts) value[text] = fields[text] ?? "";
  if (rule.object !== undefined) value[rule.object] = fields[rule.object];
  base.payload = { $case: call.type, value };
  return base as unknown as Call;
}
