export { commonEnvSchema, logLevelVar, namespaceVar, nonNegativeIntVar, parseEnv, portVar, positiveIntVar } from "./env-config.js";
export type { CommonEnv } from "./env-config.js";
export { ConfigError, ErrorCodes, ServiceError, isConfigError, isServiceError } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export { startGrpcServer, toGrpcError } from "./grpc-server.js";
export { BRISK_SERVICE_NODE_OPTIONS, applyOldGenerationFlags } from "./heap-tuning.js";
export type {
  AsyncService,
  ClientStreamingMethod,
  GrpcAuth,
  GrpcServerHandle,
  GrpcServiceRegistration,
  UnaryMethod,
} from "./grpc-server.js";
export { GrpcCallError, GrpcJsonInvoker, JsonRequestError, SWITCHYARD_SERVICES, findJsonMethod, jsonMethods } from "./grpc-json-invoker.js";
export type { GeneratedMessage, GeneratedService, GrpcJsonInvokerOptions, JsonCallTarget, JsonMethod } from "./grpc-json-invoker.js";
export { GRPC_HANDLED_METRIC, GRPC_HANDLING_SECONDS_METRIC } from "./grpc-interceptor.js";
export { REDACTED_PATHS, createLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { connectBus } from "./nats-connection.js";
export type { BusConnection, ConnectOptions } from "./nats-connection.js";
export { adminAuthFailure } from "./admin-auth.js";
export { runService } from "./run-service.js";
export { loadServerTls } from "./server-tls.js";
export type { ServerTls, TlsEnv } from "./server-tls.js";
export { exitOnSignals } from "./shutdown.js";
export { StartupPatience, isTransientStartupError } from "./startup-patience.js";
export type { StartupPatienceOptions } from "./startup-patience.js";
export { ChildCache, Counter, Gauge, Histogram, METRIC_PREFIX, Registry, childrenByLabel } from "./ops/metrics.js";
export { LocalHistogram } from "./ops/local-histogram.js";
export { startOpsServer, withOpsServer } from "./ops/ops-server.js";
export type { OpsServer } from "./ops/ops-server.js";
export { Readiness, kvStream, objectStoreStream } from "./ops/readiness.js";
export type { BusRequirements, ReadinessReport } from "./ops/readiness.js";
export { hashPassword, parsePasswordHash, PASSWORD_HASH_RULE, verifyPassword } from "./password-hash.js";
export type { PasswordHash } from "./password-hash.js";
