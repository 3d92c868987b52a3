/**
 * The workspace: sources, destinations and the connections between them.
 * Each export is documented where it is declared; libs/infra/workspace/README.md
 * says what belongs here.
 */

/** The workspace file (SWITCHYARD_WORKSPACE_FILE): reading, checking, applying it as SWITCHYARD_CONFIG_SOURCE says. */
export { applyWorkspaceFile, putWorkspaceRecords, readWorkspaceFile, workspaceRecords } from "./apply-file.js";
export type { AppliedWorkspace, ConfigSource } from "./apply-file.js";
/** The configuration bucket and its key layout. */
export { isMaxPayloadError, openConfigBucket } from "./bucket.js";
/** What every service does at start-up: open the bucket, seed it, follow it live. */
export { checkConfigSource, openWorkspace } from "./open.js";
export { kvKeys, parseKvKey } from "./kv-keys.js";
/** Write key rotation with a grace period. */
export { MAX_ROTATION_GRACE_SECONDS, liveRetiringKeys, rotateWriteKey } from "./key-rotation.js";
/** How reads show credentials in destinations, and how masked values sent back keep the stored ones. */
export { MASKED_VALUE, Masker, holdsMaskedValues, isMaskedValue } from "./masking.js";
export { MASKING_KEY_KV_KEY, loadMasker } from "./masking-key.js";
/** The rules of a valid workspace: zod schemas, limits, rule texts. */
export {
  ID_PATTERN,
  ID_RULE,
  ALLOWED_ORIGIN_RULE,
  MAX_ALLOWED_ORIGINS,
  MAX_DESTINATION_BYTES,
  MAX_REQUESTS_PER_SECOND,
  MAX_REQUESTS_PER_SECOND_RULE,
  MAX_STATIC_HEADER_BYTES,
  MAX_WEBHOOK_URL_CHARS,
  SIGNING_SECRET_RULE,
  STANDARD_WEBHOOK_HEADER_NAMES,
  allowedOriginsSchema,
  BLOCKABLE_CALL_TYPES,
  blockedCallSets,
  blockedCallsSchema,
  connectionSchema,
  describeIssues,
  destinationSchema,
  forbiddenHeaderReason,
  isSigningSecret,
  isWebOrigin,
  sourceAllowsOrigin,
  sourceBlocks,
  sourceRecordSchema,
  standardWebhooksSchema,
  storedDestinationSchema,
  webhookSettingsSchema,
  workspaceFileSchema,
} from "./schema.js";
export type {
  ActionMappingRecord,
  ActionsDestination,
  BlockedCalls,
  BlockedCallSets,
  Connection,
  Destination,
  WebhooksDestination,
  SourceRecord,
  StandardWebhooksSettings,
  WebhookSettings,
  WorkspaceFile,
} from "./schema.js";
/** A connection's filter: its rules, and its conversion from and to the gRPC message. */
export {
  FILTER_FIELD_NAMES,
  FILTER_OBJECT_NAMES,
  FILTER_PATH_RULE,
  MAX_FILTER_BYTES,
  MAX_FILTER_CONDITIONS,
  MAX_FILTER_DEPTH,
  MAX_FILTER_LIST_VALUES,
  MAX_FILTER_PATH_CHARS,
  callFilterJsonOf,
  callFilterMessageOf,
  callFilterSchema,
  isFilterPath,
} from "./call-filter.js";
export type { CallFilter, FieldCondition, FieldTest, FilterValue } from "./call-filter.js";
/** The live, in-memory view every service reads. */
export { WorkspaceView } from "./view.js";
export type { CallRoute } from "./view.js";
/** Write keys: stored and compared only as digests; read from HTTP Basic credentials. */
export { basicAuthorization, hashWriteKey, writeKeyFromAuthorization, writeKeyHashesEqual } from "./write-keys.js";
