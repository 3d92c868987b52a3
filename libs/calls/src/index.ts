export { callSchema } from "./call-schema.js";
export type { ValidCall } from "./call-schema.js";
export { MAX_BATCH_BYTES, MAX_BATCH_CALLS, MAX_CALL_BYTES, MAX_ID_LENGTH, SMALLEST_CALL_JSON_BYTES } from "./limits.js";
export { protoCallToJson, validCallToProto } from "./proto-json.js";
export type { Enrichment } from "./proto-json.js";
export { checkCall } from "./validate.js";
export type { CallCheck, Rejection } from "./validate.js";
export { MAX_MESSAGE_LEVEL, tooDeeplyNestedField, valueFitsAtLevel } from "./nesting.js";
export { hasFourDigitYear, isoTextLength, isoTextOfTime } from "./iso-text.js";
