import { protoCallToJson } from "@switchyard/calls";
import { sampleCall, seededRandom } from "./sample-calls.js";

/** A call as both client libraries take it: the method name and the message (Segment JSON fields). */
export interface ClientMessage {
  type: "identify" | "track" | "page";
  message: Record<string, unknown>;
}

/**
 * The ingest benchmark's realistic calls (about 600 bytes of JSON each; 60% track, 25% identify,
 * 15% page), as messages for a client library: without messageId and context.library, which each
 * library sets itself.
 */
export function clientMessages(count: number, seed = 42): ClientMessage[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const { type, messageId: _messageId, context, ...message } = protoCallToJson(sampleCall(random));
    const { library: _library, ...rest } = context as Record<string, unknown>;
    return { type: type as ClientMessage["type"], message: { ...message, context: rest } };
  });
}
