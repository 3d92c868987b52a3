export { FREE_FORM_FIELDS, callSchema } from "./call-schema.js";
export type { ValidCall } from "./call-schema.js";
export { MAX_BATCH_BYTES, MAX_BATCH_CALLS, MAX_CALL_BYTES, MAX_ID_LENGTH, SMALLEST_CALL_JSON_BYTES } from "./limits.js";
export { CLIENT_FIELDS, CLIENT_OBJECT_KEYS, CLIENT_TEXT_KEYS, COMMON_FIELD_RULES, COMMON_FIELDS } from "./common-fields.js";
export type { ClientKey, ClientObjectKey, ClientTextKey, CommonField, CommonKey, CommonRule, RuleOf } from "./common-fields.js";
export { FILTER_FIELD_NAMES, FILTER_OBJECT_NAMES } from "./filter-paths.js";
export { protoCallToJson, validCallToProto } from "./proto-json.js";
export type { Enrichment } from "./proto-json.js";
export { checkCall } from "./validate.js";
export type { CallCheck, Rejection } from "./validate.js";
export { MAX_MESSAGE_LEVEL, tooDeeplyNestedField, valueFitsAtLevel } from "./nesting.js";
export { hasFourDigitYear, isFourDigitYearTime, ISO_TEXT_LENGTH, isoText, isoTextLength, isoTextOfTime } from "./iso-text.js";
export { isoMillis, simpleIsoMillis } from "./iso-millis.js";
export {
  badIntegrationKey,
  CALL_KINDS,
  idBytesSurelyValid,
  isIntegrationValue,
  isPlainObject,
  isValidId,
  isValidRequired,
  PAYLOAD_RULES,
  payloadRuleOf,
  payloadTextsOf,
  requiredBytesSurelyValid,
} from "./call-rules.js";
export type { CallKind, IdentityRule, PayloadRule, RequiredField } from "./call-rules.js";
export { callPayloadField, constantNameOf, PAYLOAD_FIELD_NUMBERS, payloadFieldNumber, propertyNameOf } from "./payload-fields.js";
export type { PayloadCase } from "./payload-fields.js";
export { passesQuickly, ScannedText } from "./quick-rules.js";
export type { ScannedCallFacts } from "./quick-rules.js";
export { quickAccept, quickAcceptJson } from "./quick-accept.js";
export {
  CONTROL_CHARACTERS_RULE_MESSAGE,
  hasControlCharacter,
  HTTP_HEADER_NAME,
  HTTP_HEADER_VALUE,
  isUtf8Bytes,
  isWellFormedText,
} from "./text-rules.js";
export { FINITE_NUMBER_MESSAGE, LONE_SURROGATE_KEY_MESSAGE, LONE_SURROGATE_MESSAGE, unfaithfulValue } from "./faithful-values.js";
export type { ValueProblem } from "./faithful-values.js";
export { isValidIsoDateTime } from "./iso-date.js";
