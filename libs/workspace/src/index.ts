export { applyWorkspaceFile, readWorkspaceFile, workspaceRecords } from "./apply-file.js";
export { isMaxPayloadError, openConfigBucket } from "./bucket.js";
export { openWorkspace } from "./open.js";
export { kvKeys, parseKvKey } from "./kv-keys.js";
export { MAX_ROTATION_GRACE_SECONDS, liveRetiringKeys, rotateWriteKey } from "./key-rotation.js";
export { MASKED_VALUE, holdsMaskedValues, isMaskedValue, keepMaskedValues, maskHeaders, maskUrl, maskValue } from "./masking.js";
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
} from "./schema.js";
export type { Connection, Destination, SourceRecord, StandardWebhooksSettings, WebhookSettings, WorkspaceFile } from "./schema.js";
export { WorkspaceView } from "./view.js";
export { basicAuthorization, hashWriteKey, writeKeyFromAuthorization, writeKeyHashesEqual } from "./write-keys.js";
export { SECRET_PLACEHOLDER, configService } from "./config-api.js";
