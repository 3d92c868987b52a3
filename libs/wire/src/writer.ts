import { WireType } from "./reader.js";

/**
 * Writes the few protobuf fields ingest adds to a call or a CallBatch straight
 * into a pre-sized buffer: each `…Size` function tells how many bytes its
 * `write…` counterpart will write, so a whole CallBatch is measured first and
 * allocated once. The encodings match what the generated encoder writes.
 */

/** Bytes of a varint. Negative numbers (int32 and int64 fields) take ten: they are sign-extended to 64 bits. */
export function varintSize(value: number): number {
  if (value < 0) return 10;
  if (value < 0x80) return 1;
  let size = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** Writes a varint for a safe integer; returns the offset after it. */
export function writeVarint(target: Buffer, offset: number, value: number): number {
  if (value < 0) return writeNegativeVarint(target, offset, value);
  let rest = value;
  // Above 32 bits (seconds after 2106, lengths never), shifts would wrap: divide instead.
  while (rest > 0xffff_ffff) {
    target[offset++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  while (rest >= 0x80) {
    target[offset++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  target[offset++] = rest;
  return offset;
}

/** Two's complement in 64 bits, seven bits a byte: always ten bytes. Rare (times before 1970), so BigInt is fine. */
function writeNegativeVarint(target: Buffer, offset: number, value: number): number {
  let bits = BigInt.asUintN(64, BigInt(value));
  for (let index = 0; index < 9; index++) {
    target[offset++] = Number(bits & 0x7fn) | 0x80;
    bits >>= 7n;
  }
  target[offset++] = Number(bits);
  return offset;
}

function tag(fieldNumber: number, wireType: number): number {
  return (fieldNumber << 3) | wireType;
}

/** Size of a length-delimited field with a body of `bodySize` bytes. */
export function lengthDelimitedSize(fieldNumber: number, bodySize: number): number {
  return varintSize(tag(fieldNumber, WireType.LEN)) + varintSize(bodySize) + bodySize;
}

/** Writes the tag and length of a length-delimited field; the caller writes the body next. */
export function writeLengthDelimitedHeader(target: Buffer, offset: number, fieldNumber: number, bodySize: number): number {
  return writeVarint(target, writeVarint(target, offset, tag(fieldNumber, WireType.LEN)), bodySize);
}

export function textFieldSize(fieldNumber: number, text: string): number {
  return lengthDelimitedSize(fieldNumber, Buffer.byteLength(text, "utf8"));
}

export function writeTextField(target: Buffer, offset: number, fieldNumber: number, text: string): number {
  const at = writeLengthDelimitedHeader(target, offset, fieldNumber, Buffer.byteLength(text, "utf8"));
  return at + target.write(text, at, "utf8");
}

/**
 * A google.protobuf.Timestamp field, measured once and written as often as
 * needed (the accept time goes into every call of a batch). Stores what the
 * generated code stores for a Date: whole milliseconds, seconds and nanos
 * both rounded toward zero, so a time before 1970 has negative nanos, and
 * proto3 leaves zeros out.
 */
export class TimestampField {
  readonly byteLength: number;
  private readonly seconds: number;
  private readonly nanos: number;
  private readonly bodySize: number;

  constructor(
    private readonly fieldNumber: number,
    date: Date,
  ) {
    const millis = date.getTime();
    this.seconds = Math.trunc(millis / 1_000);
    this.nanos = (millis % 1_000) * 1_000_000;
    this.bodySize = (this.seconds !== 0 ? 1 + varintSize(this.seconds) : 0) + (this.nanos !== 0 ? 1 + varintSize(this.nanos) : 0);
    this.byteLength = lengthDelimitedSize(fieldNumber, this.bodySize);
  }

  writeTo(target: Buffer, offset: number): number {
    let at = writeLengthDelimitedHeader(target, offset, this.fieldNumber, this.bodySize);
    if (this.seconds !== 0) at = writeVarint(target, writeVarint(target, at, tag(1, WireType.VARINT)), this.seconds);
    if (this.nanos !== 0) at = writeVarint(target, writeVarint(target, at, tag(2, WireType.VARINT)), this.nanos);
    return at;
  }
}
