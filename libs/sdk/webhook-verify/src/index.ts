export type { RawBody } from "./bytes.js";
export type { HeadersLike } from "./headers.js";
export { X_SIGNATURE_HEADER, signXSignature, verifyXSignature } from "./x-signature.js";
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNING_SECRET_MAX_BYTES,
  SIGNING_SECRET_MIN_BYTES,
  SIGNING_SECRET_PREFIX,
  SIGNING_SECRET_RULE,
  STANDARD_WEBHOOK_HEADERS,
  generateSigningSecret,
  isValidSigningSecret,
  signStandardWebhook,
  signingKey,
  verifyStandardWebhook,
} from "./standard-webhooks.js";
export type {
  StandardWebhookFailure,
  StandardWebhookMessage,
  StandardWebhookResult,
  VerifyStandardWebhookOptions,
} from "./standard-webhooks.js";
