// First: replaces the generated Struct functions that drop a "__proto__" key, before anything uses them.
import "./struct-keys.js";
export { setMember } from "./struct-keys.js";
export { Timestamp } from "./gen/google/protobuf/timestamp.js";
export { Alias, Call, CallBatch, Delete, Group, Identify, Page, Screen, Track } from "./gen/switchyard/v1/calls.js";
export {
  CallRejection,
  IngestBatchRequest,
  IngestBatchResponse,
  IngestCallRequest,
  IngestCallResponse,
  IngestServiceClient,
  IngestServiceService,
} from "./gen/switchyard/v1/ingest.js";
export type { IngestServiceServer } from "./gen/switchyard/v1/ingest.js";
export { descriptorSetBase64, healthDescriptorSetBase64 } from "./gen/descriptor-set.js";
// Field numbers (CallField.MESSAGE_ID, ValueField.STRING_VALUE, ...), for the hand-written wire code.
export * from "./gen/field-numbers.js";
// The Call model (each field of Call and of its payloads, with its kind), for code that reads every field alike.
export { CALL_FIELDS, PAYLOAD_MESSAGE_FIELDS } from "./gen/call-model.js";
export type { CallType } from "./call-type.js";
export { CALL_TYPES, callTypeOf } from "./call-type.js";
export {
  DeadLetter,
  DeadLetterEntry,
  AttemptExchange,
  DeliveryAttempt,
  DeliveryAttempts,
  DeliveryServiceClient,
  DeliveryServiceService,
  DeliveryTask,
  DeferredCalls,
  DestinationStats,
  GetDeliveryAttemptRequest,
  GetDeliveryAttemptResponse,
  GetDeliveryStatsRequest,
  GetDeliveryStatsResponse,
  ListDeadLettersRequest,
  ListDeadLettersResponse,
  ListDeliveryAttemptsRequest,
  ListDeliveryAttemptsResponse,
  HttpHeader,
  ReplayDeadLettersRequest,
  ReplayDeadLettersResponse,
} from "./gen/switchyard/v1/delivery.js";
export type { DeliveryServiceServer } from "./gen/switchyard/v1/delivery.js";
// The configuration API's messages share names with the workspace records (Source, Destination,
// Connection), so they are exported under one namespace.
export * as configApi from "./gen/switchyard/v1/config.js";
export {
  AudienceServiceClient,
  AudienceServiceService,
  DeletionServiceClient,
  DeletionServiceService,
  ListAudiencesRequest,
  ListAudiencesResponse,
  RequestDeletionRequest,
  RequestDeletionResponse,
  SyncAudienceIncrementRequest,
  SyncAudienceIncrementResponse,
  SyncAudienceSnapshotRequest,
  SyncAudienceSnapshotResponse,
  SyncHeader,
  SyncSummary,
  SyncTraitIncrementRequest,
  SyncTraitIncrementResponse,
  SyncTraitSnapshotRequest,
  SyncTraitSnapshotResponse,
  TraitValue,
} from "./gen/switchyard/v1/audiences.js";
export type { AudienceServiceServer, DeletionServiceServer } from "./gen/switchyard/v1/audiences.js";
// Whole modules, for tools that look messages and methods up by name (the CLI's `switchyard call`).
export * as audiencesApi from "./gen/switchyard/v1/audiences.js";
export * as deliveryApi from "./gen/switchyard/v1/delivery.js";
export * as ingestApi from "./gen/switchyard/v1/ingest.js";
export * as insightsApi from "./gen/switchyard/v1/insights.js";
