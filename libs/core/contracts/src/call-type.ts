import type { Call } from "./gen/switchyard/v1/calls.js";

/** The kind of a call, as the `type` field of Segment JSON and forwarded bodies names it. */
export type CallType = NonNullable<Call["payload"]>["$case"];

/** The kinds a client may send (delete calls come only from the deletion API). */
export const CALL_TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;

/** The kind of a call, or undefined when it has no payload. */
export function callTypeOf(call: Call): CallType | undefined {
  return call.payload?.$case;
}
