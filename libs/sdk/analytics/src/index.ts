export { Analytics, New } from "./analytics.js";
export type { AnalyticsStats } from "./analytics.js";
export { AnalyticsError, ClosedError, OptionsError, QueueFullError, ValidationError } from "./errors.js";
export type { Logger } from "./logger.js";
export type {
  AliasMessage,
  CallType,
  CommonFields,
  GroupMessage,
  IdentifyMessage,
  Integrations,
  JsonObject,
  PageMessage,
  ScreenMessage,
  TrackMessage,
} from "./messages.js";
export { DEFAULTS } from "./options.js";
export type { AnalyticsOptions } from "./options.js";
export type { AnalyticsEvents, CallOutcome, CloseResult, DeliveredEvent, FailedEvent, FailureReason, OutcomeCallback } from "./outcomes.js";
export { isRetryable, retryDelay } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export { LIBRARY } from "./version.js";
