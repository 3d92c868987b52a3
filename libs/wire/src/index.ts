/**
 * @switchyard/wire: the hand-written protobuf code of switchyard.v1 calls, each module held equal
 * to the generated (ts-proto) code by property tests. See README.md for what each module does.
 */
export { fieldTag, lengthTag, MalformedWireError, UNUSUAL, WireReader, WireType, decodeText } from "./reader.js";
export {
  EncodedTimestamp,
  ProtoWriter,
  Unrepresentable,
  lengthDelimitedSize,
  textFieldSize,
  varintSize,
  writeLengthDelimitedHeader,
  writeTextField,
  writeVarint,
} from "./writer.js";
export { CALL_STRUCTS, CALL_TEXTS, PAYLOADS, PAYLOAD_SHAPES } from "./call-shape.js";
export type { FieldShape, PayloadCase, PayloadShape } from "./call-shape.js";
export { TextFieldId, scanCall } from "./call-scanner.js";
export type { ScannedCall } from "./call-scanner.js";
export { passesQuickly } from "./quick-rules.js";
export { invalidTextIn } from "./invalid-text.js";
export type { InvalidText } from "./invalid-text.js";
export { MAX_MESSAGE_LEVEL } from "./struct-walker.js";
export { AcceptTime, PassThroughCall } from "./pass-through-call.js";
export { EncodedCallBytes, encodeCallBatch, encodeCallBatchParts } from "./call-batch-encoder.js";
export type { CallBatchHeader, CallBatchPart, EncodedCall } from "./call-batch-encoder.js";
export { readCallBatch } from "./call-batch-reader.js";
export { encodeCall, messageIdOf, NestedTooDeeply } from "./client-call-encoder.js";
export type { CallFields, ClientCallType } from "./client-call-encoder.js";
export { parseIngestBatchRequest, parseIngestCallRequest } from "./ingest-requests.js";
export type { WireBatchRequest, WireCallRequest } from "./ingest-requests.js";
export { webhookBody, webhookBodyBytes } from "./webhook-body/webhook-body.js";
export type { WebhookBody } from "./webhook-body/webhook-body.js";
export { JsonBytes } from "./webhook-body/json-bytes.js";
export { writeWebhookBody } from "./webhook-body/webhook-body-writer.js";
export type { WrittenCall } from "./webhook-body/webhook-body-writer.js";
