import { ServiceError, writeKeyFromAuthorization, type SourceRecord, type WorkspaceView } from "@switchyard/platform";

/**
 * The source whose write key is in the Authorization value (HTTP Basic, key as
 * user name). Throws UNAUTHENTICATED for a missing, malformed or unknown key.
 */
export function authenticate(workspace: WorkspaceView, authorization: string | undefined): SourceRecord {
  const writeKey = writeKeyFromAuthorization(authorization);
  if (!writeKey) {
    throw new ServiceError("UNAUTHENTICATED", 'missing write key: send "authorization: Basic base64(<write key>:)"');
  }
  const source = workspace.sourceForWriteKey(writeKey);
  if (!source) throw new ServiceError("UNAUTHENTICATED", "unknown write key");
  return source;
}
