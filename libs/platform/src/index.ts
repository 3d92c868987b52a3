export { busNames } from "./bus-names.js";
export type { BusNames } from "./bus-names.js";
export { commonEnvSchema, logLevelVar, namespaceVar, parseEnv, portVar, positiveIntVar } from "./env-config.js";
export type { CommonEnv } from "./env-config.js";
export { ConfigError, ErrorCodes, ServiceError, isConfigError, isServiceError } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export { startGrpcServer, toGrpcError, unaryHandler } from "./grpc-server.js";
export type { GrpcServerHandle, GrpcServiceRegistration } from "./grpc-server.js";
export { REDACTED_PATHS, createLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { headerSafeId } from "./header-safe-id.js";
export { connectBus } from "./nats-connection.js";
export type { BusConnection, ConnectOptions } from "./nats-connection.js";
export { requireAdmin } from "./admin-auth.js";
export { runService } from "./run-service.js";
export { loadServerTls } from "./server-tls.js";
export type { ServerTls, TlsEnv } from "./server-tls.js";
export { exitOnSignals } from "./shutdown.js";
export { CALLS_MAX_MESSAGE_BYTES, DEFAULT_CALLS_STREAM_OPTIONS, ensureCallsStream, upsertStream } from "./streams.js";
export type { CallsStreamOptions } from "./streams.js";
export { applyWorkspaceFile, readWorkspaceFile, workspaceRecords } from "./workspace/apply-file.js";
export { isMaxPayloadError, openConfigBucket } from "./workspace/bucket.js";
export { openWorkspace } from "./workspace/open.js";
export { kvKeys, parseKvKey } from "./workspace/kv-keys.js";
export { MAX_ROTATION_GRACE_SECONDS, liveRetiringKeys, rotateWriteKey } from "./workspace/key-rotation.js";
export { MASKED_VALUE, holdsMaskedValues, isMaskedValue, keepMaskedValues, maskHeaders, maskUrl, maskValue } from "./workspace/masking.js";
export {
  ID_PATTERN,
  ID_RULE,
  ALLOWED_ORIGIN_RULE,
  MAX_ALLOWED_ORIGINS,
  MAX_DESTINATION_BYTES,
  MAX_STATIC_HEADER_BYTES,
  MAX_WEBHOOK_URL_CHARS,
  SIGNING_SECRET_RULE,
  STANDARD_WEBHOOK_HEADER_NAMES,
  allowedOriginsSchema,
  connectionSchema,
  describeIssues,
  destinationSchema,
  isSigningSecret,
  isWebOrigin,
  sourceRecordSchema,
  standardWebhooksSchema,
  storedDestinationSchema,
  webhookSettingsSchema,
  workspaceFileSchema,
} from "./workspace/schema.js";
export type {
  Connection,
  Destination,
  SourceRecord,
  StandardWebhooksSettings,
  WebhookSettings,
  WorkspaceFile,
} from "./workspace/schema.js";
export { WorkspaceView } from "./workspace/view.js";
export { basicAuthorization, hashWriteKey, writeKeyFromAuthorization, writeKeyHashesEqual } from "./write-keys.js";
export { ChildCache, Counter, Gauge, Histogram, METRIC_PREFIX, Registry, childrenByLabel } from "./ops/metrics.js";
export { startOpsServer, withOpsServer } from "./ops/ops-server.js";
export type { OpsServer } from "./ops/ops-server.js";
export { Readiness, kvStream, objectStoreStream } from "./ops/readiness.js";
export type { BusRequirements, ReadinessReport } from "./ops/readiness.js";
