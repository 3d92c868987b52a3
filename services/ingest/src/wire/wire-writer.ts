import { WireType } from "./wire-reader.js";

/**
 * Writes the few protobuf fields ingest adds to a call or a CallBatch straight
 * into a pre-sized buffer: each `…Size` function tells how many bytes its
 * `write…` counterpart will write, so a whole CallBatch is measured first and
 * allocated once. The encodings match what the generated encoder writes.
 */

/** Bytes of a varint. Negative numbers (int32 and int64 fields) take ten: they are sign-extended to 64 bits. */
export function varintSize(value: number): number {
  if (value < 0) return 10;
  let size = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** Writes a varint for a safe integer; returns the offset after it. */
export function writeVarint(target: Buffer, offset: number, value: number): number {
  if (value < 0) return writeNegativeVarint(target, offset, value);
  let rest = value;
  while (rest >= 0x80) {
    target[offset++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
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
 * The seconds and nanos the generated code stores for a Date: whole
 * milliseconds, both rounded toward zero, so a time before 1970 has negative
 * nanos (proto3 omits zeros).
 */
function timestampParts(date: Date): { seconds: number; nanos: number } {
  const millis = date.getTime();
  return { seconds: Math.trunc(millis / 1_000), nanos: (millis % 1_000) * 1_000_000 };
}

function timestampBodySize(seconds: number, nanos: number): number {
  return (seconds !== 0 ? 1 + varintSize(seconds) : 0) + (nanos !== 0 ? 1 + varintSize(nanos) : 0);
}

export function timestampFieldSize(fieldNumber: number, date: Date): number {
  const { seconds, nanos } = timestampParts(date);
  return lengthDelimitedSize(fieldNumber, timestampBodySize(seconds, nanos));
}

export function writeTimestampField(target: Buffer, offset: number, fieldNumber: number, date: Date): number {
  const { seconds, nanos } = timestampParts(date);
  let at = writeLengthDelimitedHeader(target, offset, fieldNumber, timestampBodySize(seconds, nanos));
  if (seconds !== 0) at = writeVarint(target, writeVarint(target, at, tag(1, WireType.VARINT)), seconds);
  if (nanos !== 0) at = writeVarint(target, writeVarint(target, at, tag(2, WireType.VARINT)), nanos);
  return at;
}
