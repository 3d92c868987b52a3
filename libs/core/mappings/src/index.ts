/**
 * @switchyard/mappings: the Webhooks (Actions) kind's languages, Segment's own. A trigger
 * (which calls a mapping takes) and a mapping (what it makes of a call), each checked when
 * saved, with messages that name the place, and applied by Segment's packages.
 */

/** A trigger in Segment's subscription language, and why one is refused. */
export { Trigger, TriggerError } from "./trigger.js";
/** A mapping in Segment's mapping-kit, its problems, and what it made of an event. */
export { MAX_MAPPING_BYTES, Mapping, mappingProblems } from "./mapping.js";
export type { JsonObject, JsonValue, MappedValue } from "./mapping.js";
/** A call in Segment's event shape, what triggers and mappings read. */
export { callEvent } from "./call-event.js";
/** The request a Webhooks (Actions) mapping makes of a call, and the bodies of one call and of a batch. */
export { ActionRequestMapping, DEFAULT_DATA, batchBody, singleBody } from "./action-request.js";
export type { ActionFields, ActionMethod, MappedRequest, MappedRequestResult } from "./action-request.js";
/** A Webhooks (Actions) destination's mappings, checked (problems name mapping and field) and compiled. */
export { compileActionMappings } from "./action-mappings.js";
/** The kind's limits and defaults (also `@switchyard/mappings/limits`, for the browser). */
export {
  ACTION_METHODS,
  DEFAULT_BATCH_SIZE,
  DEFAULT_BATCH_WAIT_MS,
  MAX_ACTION_MAPPINGS,
  MAX_BATCH_SIZE,
  MAX_BATCH_WAIT_MS,
  MAX_MAPPING_NAME_CHARS,
  MIN_BATCH_WAIT_MS,
} from "./limits.js";
export type { CompiledActionMapping, CompiledActionMappings } from "./action-mappings.js";
