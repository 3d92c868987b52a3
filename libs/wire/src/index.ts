export { MalformedWireError, WireReader, WireType, decodeText } from "./reader.js";
export {
  TimestampField,
  lengthDelimitedSize,
  textFieldSize,
  varintSize,
  writeLengthDelimitedHeader,
  writeTextField,
  writeVarint,
} from "./writer.js";
export { TextFieldId, scanCall } from "./call-scanner.js";
export type { PayloadCase, ScannedCall } from "./call-scanner.js";
export { invalidTextIn } from "./invalid-text.js";
export type { InvalidText } from "./invalid-text.js";
export { MAX_MESSAGE_LEVEL } from "./struct-walker.js";
export { AcceptTime, PassThroughCall } from "./pass-through-call.js";
export { EncodedCallBytes, encodeCallBatch, encodeCallBatchParts } from "./call-batch-encoder.js";
export type { CallBatchHeader, CallBatchPart, EncodedCall } from "./call-batch-encoder.js";
export { readCallBatch } from "./call-batch-reader.js";
export { parseIngestBatchRequest, parseIngestCallRequest } from "./ingest-requests.js";
export type { WireBatchRequest, WireCallRequest } from "./ingest-requests.js";
export { webhookBody } from "./webhook-body/webhook-body.js";
export type { WebhookBody } from "./webhook-body/webhook-body.js";
export { JsonBytes } from "./webhook-body/json-bytes.js";
export { writeWebhookBody } from "./webhook-body/webhook-body-writer.js";
export type { WrittenCall } from "./webhook-body/webhook-body-writer.js";
export { UNUSUAL, WireReader as BodyCallReader } from "./webhook-body/call-reader.js";
