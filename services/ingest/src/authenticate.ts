import { ServiceError } from "@switchyard/platform";
import { hashWriteKey, writeKeyFromAuthorization, writeKeyHashesEqual, type SourceRecord, type WorkspaceView } from "@switchyard/workspace";

/**
 * The source whose write key is in the Authorization value (HTTP Basic, key as
 * user name). Throws UNAUTHENTICATED for a missing, malformed or unknown key.
 */
export function authenticate(workspace: WorkspaceView, authorization: string | undefined): SourceRecord {
  const writeKey = writeKeyFromAuthorization(authorization);
  if (!writeKey) {
    throw new ServiceError("UNAUTHENTICATED", 'missing write key: send "authorization: Basic base64(<write key>:)"');
  }
  return sourceOf(workspace, writeKey);
}

/**
 * HTTP API: the source whose write key is in the Authorization value, or else
 * in `bodyWriteKey` (the `writeKey` field browser and mobile SDKs put in the
 * JSON body). When both are given the header's key is used and the body's
 * must be the same. Throws UNAUTHENTICATED for a missing, malformed,
 * mismatched or unknown key; messages never repeat a key.
 */
export function authenticateHttp(workspace: WorkspaceView, authorization: string | undefined, bodyWriteKey: unknown): SourceRecord {
  if (bodyWriteKey === undefined) {
    if (authorization === undefined) {
      throw new ServiceError(
        "UNAUTHENTICATED",
        'missing write key: send "authorization: Basic base64(<write key>:)" or a "writeKey" field in the JSON body',
      );
    }
    return authenticate(workspace, authorization);
  }
  if (typeof bodyWriteKey !== "string" || bodyWriteKey === "") {
    throw new ServiceError("UNAUTHENTICATED", "writeKey: must be a non-empty string");
  }
  if (authorization === undefined) return sourceOf(workspace, bodyWriteKey);
  const headerKey = writeKeyFromAuthorization(authorization);
  if (!headerKey) throw new ServiceError("UNAUTHENTICATED", 'malformed Authorization header: send "Basic base64(<write key>:)"');
  // Digests compared in constant time, as every key comparison is.
  if (!writeKeyHashesEqual(hashWriteKey(headerKey), hashWriteKey(bodyWriteKey))) {
    throw new ServiceError("UNAUTHENTICATED", "writeKey in the body differs from the write key in the Authorization header");
  }
  return sourceOf(workspace, headerKey);
}

function sourceOf(workspace: WorkspaceView, writeKey: string): SourceRecord {
  const source = workspace.sourceForWriteKey(writeKey);
  if (!source) throw new ServiceError("UNAUTHENTICATED", "unknown write key");
  return source;
}
