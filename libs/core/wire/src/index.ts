/**
 * @switchyard/wire: the hand-written protobuf code of switchyard.v1 calls, each module held equal
 * to the generated (ts-proto) code by property tests. README.md lists the modules.
 */

/** The one cursor over wire data: checked reads (MalformedWireError) and plain reads (UNUSUAL); tags from field numbers. */
export { MalformedWireError, UNUSUAL, WireReader } from "./reader.js";
/** Protobuf wire types and the tag of a length-delimited field. */
export { lengthTag, WireType } from "./tags.js";
/** The one writer: ProtoWriter writes whole messages into a growing buffer; Unrepresentable is a value it cannot carry. */
export { ProtoWriter, Unrepresentable } from "./writer.js";
/** The size and the header (tag and length) of a length-delimited field, for a message put together from parts. */
export { lengthDelimitedSize, writeLengthDelimitedHeader } from "./writer.js";
/** A payload's case name, as the generated Call's oneof spells it. */
export type { PayloadCase } from "./call-shape.js";
/** Reads a Call from its bytes in one pass (the gRPC fast path): kind, text ranges, times, sizes. */
export { TextFieldId, scanCall } from "./call-scanner.js";
/** What scanCall found. */
export type { ScannedCall } from "./call-scanner.js";
/** Where the scan found the first text that is not valid UTF-8: its field's path and the refusal's message. */
export type { InvalidTextPlace } from "./struct-walker.js";
/** An accepted call from the client's own bytes, with the fields ingest sets; the accept time encoded once per batch. */
export { AcceptTime, PassThroughCall } from "./pass-through-call.js";
/** Encodes CallBatch messages from calls already encoded, in parts that fit the bus. */
export { EncodedCallBytes, encodeCallBatchParts } from "./call-batch-encoder.js";
/** The CallBatch's own fields, one part of a batch, and a call already encoded. */
export type { CallBatchHeader, CallBatchPart, EncodedCall } from "./call-batch-encoder.js";
/** The one walk over a CallBatch's own fields from its bytes, and a checked count of its calls. */
export { countBatchCalls, walkCallBatch } from "./call-batch-walker.js";
/** What walkCallBatch hands each field to. */
export type { CallBatchVisitor } from "./call-batch-walker.js";
/** Decodes a CallBatch to exactly what the generated decoder returns, faster. */
export { readCallBatch } from "./call-batch-reader.js";
/** The client library's call encoder: a valid call straight to Call bytes, measuring its JSON size. */
export { encodeCall, messageIdOf, NestedTooDeeply } from "./client-call-encoder.js";
/** What encodeCall reads of a call, and the call types a client sends. */
export type { CallFields, ClientCallType } from "./client-call-encoder.js";
/** Ingest's fast path for Segment JSON calls: a surely valid call straight to the bytes the generated encoder writes. */
export { encodeJsonCall, FastJsonCall } from "./json-call-encoder.js";
/** Ingest's fast path for a whole Segment batch body: each ordinary call written straight from the body's bytes. */
export { transcodeBatchBody, TranscodedBatchCall } from "./json-batch-transcoder.js";
/** What transcodeBatchBody found in a body. */
export type { TranscodedBatch } from "./json-batch-transcoder.js";
/** gRPC request deserializers for IngestService: the calls stay bytes. */
export { parseIngestBatchRequest, parseIngestCallRequest } from "./ingest-requests.js";
/** What the ingest request readers return. */
export type { WireBatchRequest, WireCallRequest } from "./ingest-requests.js";
/** The webhook body of a decoded call, as bytes or as an object (written by the one body writer). */
export { webhookBody, webhookBodyBytes } from "./webhook-body/webhook-body.js";
/** A webhook body as an object. */
export type { WebhookBody } from "./webhook-body/webhook-body.js";
/** A field of a call named by its path as the webhook body spells it, found in the call's bytes (destination filters). */
export { CallFieldFinder, callPath, FieldKind } from "./call-fields.js";
/** A path resolved by callPath. */
export type { CallPath } from "./call-fields.js";
/** Where webhook bodies are written, back to back in slabs. */
export { JsonBytes } from "./webhook-body/json-bytes.js";
/** The one webhook body writer, straight from a call's bytes. */
export { writeWebhookBody } from "./webhook-body/webhook-body-writer.js";
/** What the body writer tells of a call besides its body. */
export type { WrittenCall } from "./webhook-body/webhook-body-writer.js";
/** What a schema counts of each call of a batch (type, name, received_at, top-level keys and their JSON types), read from its bytes. */
export { BatchFacts, readBatchFacts } from "./call-facts.js";
/** The JSON type of a value, as a schema records it. */
export type { JsonValueType } from "./call-facts.js";
/** The attempt log's records: an exchange as an object, delivered attempts and index entries as bytes. */
export {
  encodeDeliveredAttempts,
  encodedSize,
  exchangeOf,
  indexEntrySize,
  pushLastSummary,
  writeDeliveredAttempt,
  writeIndexEntry,
} from "./attempt-log/delivered-attempts.js";
/** What the attempt log's writer takes of a request and its outcome. */
export type { DeliveredEntry, LoggedAttempt, LoggedEntry, LoggedRequest } from "./attempt-log/delivered-attempts.js";
/** Reading the attempt log from its bytes: entries of a message, an attempt without its exchange, the facts a page filters on. */
export { AttemptFacts, attemptEntryRanges, attemptWithoutExchange } from "./attempt-log/attempt-entries.js";
/** The values of a message of one repeated length-delimited field, as ranges of its bytes. */
export { repeatedFieldRanges } from "./repeated-field.js";
export type { FieldRanges } from "./repeated-field.js";
