import type { Call } from "@switchyard/contracts";
import type { ValidCall } from "./call-schema.js";
import { isoText } from "./iso-text.js";

/**
 * A gRPC call in Segment JSON shape, so it can be checked by the same rules
 * as HTTP calls. Empty proto3 strings mean "not set".
 */
export function protoCallToJson(call: Call): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  if (call.payload) json.type = call.payload.$case;
  setText(json, "messageId", call.messageId);
  setText(json, "userId", call.userId);
  setText(json, "anonymousId", call.anonymousId);
  // A protobuf Timestamp can hold seconds far outside the range of a JS Date (±8.64e15 ms). Such a Date is
  // invalid, and its text "Invalid Date" is refused by the timestamp rule ("format") like any other non-date.
  if (call.timestamp) json.timestamp = isoText(call.timestamp);
  if (call.context) json.context = call.context;
  if (call.integrations) json.integrations = call.integrations;
  const payload = call.payload;
  switch (payload?.$case) {
    case "identify":
      if (payload.value.traits) json.traits = payload.value.traits;
      break;
    case "track":
      setText(json, "event", payload.value.event);
      if (payload.value.properties) json.properties = payload.value.properties;
      break;
    case "page":
    case "screen":
      setText(json, "name", payload.value.name);
      setText(json, "category", payload.value.category);
      if (payload.value.properties) json.properties = payload.value.properties;
      break;
    case "group":
      setText(json, "groupId", payload.value.groupId);
      if (payload.value.traits) json.traits = payload.value.traits;
      break;
    case "alias":
      setText(json, "previousId", payload.value.previousId);
      break;
    case "delete":
    case undefined:
      break;
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
 * otherwise the accept time).
 */
export function validCallToProto(call: ValidCall, enrichment: Enrichment): Call {
  const base = {
    messageId: call.messageId ?? enrichment.messageId,
    userId: call.userId ?? "",
    anonymousId: call.anonymousId ?? "",
    timestamp: call.timestamp === undefined ? enrichment.receivedAt : new Date(call.timestamp),
    context: call.context,
    integrations: call.integrations,
    receivedAt: enrichment.receivedAt,
  };
  switch (call.type) {
    case "identify":
      return { ...base, payload: { $case: "identify", value: { traits: call.traits } } };
    case "track":
      return { ...base, payload: { $case: "track", value: { event: call.event, properties: call.properties } } };
    case "page":
      return {
        ...base,
        payload: { $case: "page", value: { name: call.name ?? "", category: call.category ?? "", properties: call.properties } },
      };
    case "screen":
      return {
        ...base,
        payload: { $case: "screen", value: { name: call.name ?? "", category: call.category ?? "", properties: call.properties } },
      };
    case "group":
      return { ...base, payload: { $case: "group", value: { groupId: call.groupId, traits: call.traits } } };
    case "alias":
      return { ...base, payload: { $case: "alias", value: { previousId: call.previousId } } };
  }
}
