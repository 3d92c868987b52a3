import type { EncodedCall } from "./call-batch-encoder.js";
import type { ScannedCall } from "./call-scanner.js";
import { textFieldSize, timestampFieldSize, writeTextField, writeTimestampField } from "./wire-writer.js";

// Field numbers of Call that ingest writes.
const MESSAGE_ID = 1;
const TIMESTAMP = 4;
const RECEIVED_AT = 7;

export interface CallStamp {
  /** Written only when the client sent no messageId of its own. */
  messageId: string;
  /** The client's timestamp, or the accept time. */
  timestamp: Date;
  receivedAt: Date;
}

/**
 * An accepted call as it goes on the bus, from the client's own bytes: the
 * kept ranges copied as they are (every field but timestamp, received_at and
 * unknown ones), then the fields ingest sets.
 *
 * Protobuf merges a repeated occurrence of an embedded message field, so a
 * client's received_at could not be overridden by appending ours: it is left
 * out instead. The timestamp is always written by ingest, so it is stored
 * exactly as the decode-and-re-encode path stores it (whole milliseconds).
 */
export class PassThroughCall implements EncodedCall {
  readonly byteLength: number;
  private readonly addedMessageId: string | undefined;

  constructor(
    private readonly call: ScannedCall,
    private readonly stamp: CallStamp,
  ) {
    // A client's empty messageId counts as none; ours, written last, then wins.
    this.addedMessageId = call.outline.messageId === "" ? stamp.messageId : undefined;
    let size = 0;
    const ranges = call.keptRanges;
    for (let index = 0; index < ranges.length; index += 2) size += ranges[index + 1]! - ranges[index]!;
    if (this.addedMessageId !== undefined) size += textFieldSize(MESSAGE_ID, this.addedMessageId);
    size += timestampFieldSize(TIMESTAMP, stamp.timestamp);
    size += timestampFieldSize(RECEIVED_AT, stamp.receivedAt);
    this.byteLength = size;
  }

  writeTo(target: Buffer, offset: number): number {
    const { bytes, keptRanges } = this.call;
    let at = offset;
    for (let index = 0; index < keptRanges.length; index += 2) {
      at += bytes.copy(target, at, keptRanges[index]!, keptRanges[index + 1]!);
    }
    if (this.addedMessageId !== undefined) at = writeTextField(target, at, MESSAGE_ID, this.addedMessageId);
    at = writeTimestampField(target, at, TIMESTAMP, this.stamp.timestamp);
    return writeTimestampField(target, at, RECEIVED_AT, this.stamp.receivedAt);
  }
}
