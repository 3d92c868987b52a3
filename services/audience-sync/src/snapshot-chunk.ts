import {
  AudienceServiceService,
  SyncAudienceSnapshotRequest,
  SyncAudienceSnapshotRequestField,
  type SyncHeader,
} from "@switchyard/contracts";
import { repeatedFieldRanges } from "@switchyard/wire";

/**
 * A SyncAudienceSnapshot message with its user ids left as UTF-8 bytes in the
 * message: user id i is bytes[idStarts[i], idStarts[i] + idLengths[i]).
 * Decoding a snapshot of a million members into strings would allocate a
 * million strings (and the decoder an array per string) only for the
 * collector to turn them back into bytes.
 */
export interface AudienceSnapshotChunk {
  header: SyncHeader | undefined;
  bytes: Buffer;
  idStarts: number[];
  idLengths: number[];
}

/** Protobuf's string decoding: invalid UTF-8 becomes U+FFFD, a leading U+FEFF is kept. */
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Decodes a message as SyncAudienceSnapshotRequest.decode would, but keeps
 * the user ids as bytes. Messages of user ids only, as clients write all but
 * the first, are read directly; any other (the first, with the header; ones
 * with unknown fields, unusual encodings or damage) goes through the
 * generated decoder, so it is read, or refused, exactly as before.
 */
export function decodeAudienceSnapshotChunk(bytes: Buffer): AudienceSnapshotChunk {
  const chunk = readUserIds(bytes);
  if (chunk) return chunk;
  const request = SyncAudienceSnapshotRequest.decode(bytes);
  const userIds = Buffer.from(SyncAudienceSnapshotRequest.encode({ header: undefined, userIds: request.userIds }).finish());
  return { ...readUserIds(userIds)!, header: request.header };
}

/** The user id at `index`, as a string the way protobuf decodes it. */
export function chunkUserId(chunk: AudienceSnapshotChunk, index: number): string {
  const start = chunk.idStarts[index]!;
  return utf8.decode(chunk.bytes.subarray(start, start + chunk.idLengths[index]!));
}

/** AudienceService with SyncAudienceSnapshot messages decoded by decodeAudienceSnapshotChunk. */
export const audienceServiceDefinition = {
  ...AudienceServiceService,
  syncAudienceSnapshot: { ...AudienceServiceService.syncAudienceSnapshot, requestDeserialize: decodeAudienceSnapshotChunk },
};

/** The user ids of a message made only of well-formed user ids; undefined for any other. */
function readUserIds(bytes: Buffer): AudienceSnapshotChunk | undefined {
  const ranges = repeatedFieldRanges(bytes, SyncAudienceSnapshotRequestField.USER_IDS);
  return ranges && { header: undefined, bytes, idStarts: ranges.starts, idLengths: ranges.lengths };
}
