import type { EncodedCall } from "./call-batch-encoder.js";
import type { ScannedCall } from "./call-scanner.js";
import { CallField } from "@switchyard/contracts";
import { EncodedTimestamp, textFieldSize, writeTextField } from "./writer.js";

// The fields of Call that ingest writes.
const { MESSAGE_ID, TIMESTAMP, RECEIVED_AT } = CallField;

/** When a batch was accepted, with the Timestamp fields every call of it gets encoded once. */
export class AcceptTime {
  /** Call.received_at. */
  readonly receivedAtField: EncodedTimestamp;
  /** Call.timestamp of the calls that came without one. */
  readonly timestampField: EncodedTimestamp;

  constructor(readonly date: Date) {
    this.receivedAtField = new EncodedTimestamp(RECEIVED_AT, date);
    this.timestampField = new EncodedTimestamp(TIMESTAMP, date);
  }
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
  private readonly timestampField: EncodedTimestamp;

  /** `messageId` is written only when the client sent none (or an empty one). */
  constructor(
    private readonly call: ScannedCall,
    messageId: string,
    private readonly acceptTime: AcceptTime,
  ) {
    // A client's empty messageId counts as none; ours, written after it, wins.
    this.addedMessageId = call.messageId === "" ? messageId : undefined;
    const clientTimestamp = call.timestamp;
    this.timestampField = clientTimestamp ? new EncodedTimestamp(TIMESTAMP, clientTimestamp) : acceptTime.timestampField;
    let size = this.timestampField.byteLength + acceptTime.receivedAtField.byteLength;
    const ranges = call.keptRanges;
    for (let index = 0; index < ranges.length; index += 2) size += ranges[index + 1]! - ranges[index]!;
    if (this.addedMessageId !== undefined) size += textFieldSize(MESSAGE_ID, this.addedMessageId);
    this.byteLength = size;
  }

  writeTo(target: Buffer, offset: number): number {
    const { bytes, keptRanges } = this.call;
    let at = offset;
    for (let index = 0; index < keptRanges.length; index += 2) {
      at += bytes.copy(target, at, keptRanges[index]!, keptRanges[index + 1]!);
    }
    if (this.addedMessageId !== undefined) at = writeTextField(target, at, MESSAGE_ID, this.addedMessageId);
    at = this.timestampField.writeTo(target, at);
    return this.acceptTime.receivedAtField.writeTo(target, at);
  }
}
