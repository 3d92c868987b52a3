import { isoText, protoCallToJson } from "@switchyard/calls";
import type { Call } from "@switchyard/contracts";
import type { JsonObject } from "./segment-packages.js";

/**
 * A call as triggers and mappings see it: Segment's event shape, the JSON a client sent
 * (`type`, `event`, `userId`, `properties`, `context`, ... as the Call model names them, empty
 * texts left out), with the times as ISO 8601 text and `receivedAt`, when ingest accepted it.
 * `{"@path": "$."}` makes exactly this.
 */
export function callEvent(call: Call): JsonObject {
  const event = protoCallToJson(call) as JsonObject;
  if (call.receivedAt) event.receivedAt = isoText(call.receivedAt);
  return event;
}
