import {
  AttemptExchangeField,
  DeliveryAttemptField,
  DeliveryAttemptsField,
  HttpHeaderField,
  type AttemptExchange,
  type HttpHeader,
} from "@switchyard/contracts";

/*
 * The attempt log's records of requests made (switchyard.v1.DeliveryAttempt, its exchange), as
 * objects for the failed path and as bytes straight from what the request kept for the delivered
 * one, which runs for every delivered webhook.
 */

/** What one destination target's requests share: its URL and static headers as the log shows them. */
export interface LoggedEntry {
  /** The static headers' values masked, as a flat [name, value, …] list: a prefix of the headers sent. */
  readonly loggedHeaders: readonly string[];
  /** The URL with its query values masked. */
  readonly loggedUrl: string;
}

/** One request as the log records it, all by reference. */
export interface LoggedRequest {
  /** POST when absent. */
  readonly method?: string | undefined;
  readonly entry: LoggedEntry;
  /** The headers sent, as a flat [name, value, …] list. */
  readonly headers: readonly string[];
  readonly body: Buffer;
}

/** One request made and what came back. */
export interface LoggedAttempt {
  readonly status: number;
  readonly latencyMs: number;
  readonly request?: LoggedRequest | undefined;
  /** The response's headers as undici gave them ([name, value, …]). */
  readonly responseHeaders?: readonly Buffer[] | undefined;
  readonly responseBody?: Buffer | undefined;
  readonly responseBodyTruncated?: boolean | undefined;
  /** For a request that carried several calls: their messageIds, in the order of its body. */
  readonly batch?: { readonly messageIds: readonly string[] } | undefined;
}

/** A delivered attempt as the attempt log's writer holds it until its batch is published. */
export interface DeliveredEntry {
  readonly destinationId: string;
  readonly sourceId: string;
  readonly messageId: string;
  readonly attemptNumber: number;
  readonly atMs: number;
  readonly attempt: LoggedAttempt;
}

/** The exchange of an attempt as the log records it: the static headers' values masked, the signature kept. */
export function exchangeOf(attempt: LoggedAttempt): AttemptExchange | undefined {
  const request = attempt.request;
  if (!request) return undefined;
  const { headers } = request;
  const masked = request.entry.loggedHeaders;
  const requestHeaders: HttpHeader[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    requestHeaders.push({ name: headers[i]!, value: i + 1 < masked.length ? masked[i + 1]! : headers[i + 1]! });
  }
  const responseHeaders: HttpHeader[] = [];
  const raw = attempt.responseHeaders;
  if (raw) {
    for (let i = 0; i + 1 < raw.length; i += 2) responseHeaders.push({ name: raw[i]!.toString(), value: raw[i + 1]!.toString() });
  }
  return {
    method: request.method ?? "POST",
    url: request.entry.loggedUrl,
    requestHeaders,
    requestBody: request.body,
    responseHeaders,
    responseBody: attempt.responseBody ?? EMPTY,
    responseBodyTruncated: attempt.responseBodyTruncated ?? false,
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * Encodes delivered attempts as one switchyard.v1.DeliveryAttempts, straight
 * from what the requests kept (no DeliveryAttempt objects, no strings made of
 * the response's header bytes): this runs for every delivered webhook. The
 * bytes are what DeliveryAttempts.encode gives for the same attempt
 * (delivered-encoder.test.ts holds it to that); the exchange comes last in
 * each attempt, which the attempt log's reader relies on to skip it.
 */
export function encodeDeliveredAttempts(entries: readonly DeliveredEntry[]): Buffer {
  let total = 0;
  for (const entry of entries) total += encodedSize(entry);
  const buf = Buffer.allocUnsafe(total);
  let pos = 0;
  for (const entry of entries) {
    encodedSize(entry);
    pos = writeDeliveredAttempt(buf, pos, entry);
  }
  return buf;
}

/** The sizes encodedSize found last, which writeDeliveredAttempt (called next, for the same entry) uses. */
let measuredExchange = 0;
let measuredAttempt = 0;

/** The bytes one attempt takes in a DeliveryAttempts message (its field included). */
export function encodedSize(entry: DeliveredEntry): number {
  if (texts.size > MAX_TEXTS) texts.clear();
  measuredExchange = exchangeSize(entry.attempt);
  measuredAttempt = attemptSize(entry, measuredExchange);
  return 1 + varintSize(measuredAttempt) + measuredAttempt;
}

/**
 * Writes one attempt of a DeliveryAttempts message at `pos`, right after encodedSize(entry) (room
 * for that many bytes must be there); returns where it ends. Messages are made of these one after
 * the other.
 */
export function writeDeliveredAttempt(buf: Buffer, pos: number, entry: DeliveredEntry): number {
  const out = new Out(buf, pos);
  out.tag(ATTEMPTS);
  out.varint(measuredAttempt);
  writtenSummaryStart = out.pos;
  writeAttempt(out, entry, measuredExchange);
  writtenSummaryEnd = entry.attempt.request ? out.pos - delimitedSize(measuredExchange) : out.pos;
  return out.pos;
}

/** Where the attempt writeDeliveredAttempt wrote last lies without its exchange (a DeliveryAttempt's fields). */
let writtenSummaryStart = 0;
let writtenSummaryEnd = 0;

/**
 * Appends to `marks` where, in the buffer writeDeliveredAttempt was last given, that attempt's
 * fields other than its exchange lie (start, then end): the attempt index's entry for it.
 */
export function pushLastSummary(marks: number[]): void {
  marks.push(writtenSummaryStart, writtenSummaryEnd);
}

/**
 * An entry of the attempt index: a DeliveryAttempts' attempt made of `summary` (a DeliveryAttempt's
 * fields, its exchange left out) and `attemptId`, which says where the whole attempt is kept.
 */
export function indexEntrySize(summaryLength: number, attemptId: string): number {
  return delimitedSize(summaryLength + delimitedSize(attemptId.length));
}

/** Writes an index entry (see indexEntrySize) at `pos`; returns where it ends. `attemptId` is ASCII. */
export function writeIndexEntry(buf: Buffer, pos: number, summary: Uint8Array, attemptId: string): number {
  const out = new Out(buf, pos);
  out.tag(ATTEMPTS);
  out.varint(summary.length + delimitedSize(attemptId.length));
  out.raw(summary);
  out.tag(tagOf(A.ATTEMPT_ID, 2));
  out.varint(attemptId.length);
  out.pos += out.buf.write(attemptId, out.pos, "latin1");
  return out.pos;
}

const tagOf = (field: number, wireType: number) => (field << 3) | wireType;
const ATTEMPTS = tagOf(DeliveryAttemptsField.ATTEMPTS, 2);
const A = DeliveryAttemptField;
const X = AttemptExchangeField;
const H = HttpHeaderField;
const DELIVERED = Buffer.from("delivered");
const POST = Buffer.from("POST");

/** The request's method as the log writes it. */
function methodBytes(request: LoggedRequest): Buffer {
  return request.method === undefined || request.method === "POST" ? POST : repeated(request.method);
}

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x20_0000 ? 3 : n < 0x1000_0000 ? 4 : 5;
}

/**
 * The texts attempts repeat (destinations, sources and URLs, header names), encoded once: each
 * string measured and written costs a call into the runtime. Forgotten now and then.
 */
const texts = new Map<string, Buffer>();
const MAX_TEXTS = 10_000;

function repeated(text: string): Buffer {
  let bytes = texts.get(text);
  if (!bytes) {
    bytes = Buffer.from(text);
    texts.set(text, bytes);
  }
  return bytes;
}

const stringSize = (text: string) => Buffer.byteLength(text);
/** A repeated text field (see `repeated`), empty ones left out. */
const repeatedFieldSize = (text: string) => (text.length === 0 ? 0 : delimitedSize(repeated(text).length));
/** A length-delimited field of `length` bytes (one-byte tag). */
const delimitedSize = (length: number) => 1 + varintSize(length) + length;
/** A non-empty string field (proto3 leaves empty ones out). */
const textFieldSize = (text: string) => (text.length === 0 ? 0 : delimitedSize(stringSize(text)));
const varintFieldSize = (n: number) => (n === 0 ? 0 : 1 + varintSize(n));

function timestampSize(ms: number): number {
  const seconds = Math.floor(ms / 1000);
  const nanos = (ms - seconds * 1000) * 1_000_000;
  return varintFieldSize(seconds) + varintFieldSize(nanos);
}

function attemptSize(entry: DeliveredEntry, exchange: number): number {
  const { attempt } = entry;
  const url = attempt.request?.entry.loggedUrl ?? "";
  return (
    repeatedFieldSize(entry.destinationId) +
    textFieldSize(entry.messageId) +
    repeatedFieldSize(url) +
    varintFieldSize(attempt.status) +
    varintFieldSize(attempt.latencyMs) +
    varintFieldSize(entry.attemptNumber) +
    delimitedSize(timestampSize(entry.atMs)) +
    delimitedSize(DELIVERED.length) +
    repeatedFieldSize(entry.sourceId) +
    batchIdsSize(attempt) +
    (attempt.request ? delimitedSize(exchange) : 0)
  );
}

/** A batch's messageIds, every one written (a repeated field keeps empty elements). */
function batchIdsSize(attempt: LoggedAttempt): number {
  let size = 0;
  for (const id of attempt.batch?.messageIds ?? NO_IDS) size += delimitedSize(stringSize(id));
  return size;
}
const NO_IDS: readonly string[] = [];

/** The request's headers as logged, by the same rule as exchangeOf: the static ones masked. */
function loggedHeader(request: LoggedRequest, index: number): string {
  const masked = request.entry.loggedHeaders;
  return index < masked.length ? masked[index]! : request.headers[index]!;
}

const headerSize = (name: number, value: number) => (name === 0 ? 0 : delimitedSize(name)) + (value === 0 ? 0 : delimitedSize(value));

/** The fixed part of an entry's logged headers, encoded once per webhook entry. */
const entryHeaderBytes = new WeakMap<LoggedEntry, Buffer>();

function staticHeaders(request: LoggedRequest): Buffer {
  let bytes = entryHeaderBytes.get(request.entry);
  if (!bytes) {
    const masked = request.entry.loggedHeaders;
    const parts: Buffer[] = [];
    for (let i = 0; i + 1 < masked.length; i += 2) {
      const name = Buffer.from(masked[i]!);
      const value = Buffer.from(masked[i + 1]!);
      const out = new Out(Buffer.allocUnsafe(delimitedSize(headerSize(name.length, value.length))));
      out.header(tagOf(X.REQUEST_HEADERS, 2), name, value);
      parts.push(out.buf);
    }
    bytes = Buffer.concat(parts);
    entryHeaderBytes.set(request.entry, bytes);
  }
  return bytes;
}

function exchangeSize(attempt: LoggedAttempt): number {
  const request = attempt.request;
  if (!request) return 0;
  let size = delimitedSize(methodBytes(request).length) + repeatedFieldSize(request.entry.loggedUrl) + staticHeaders(request).length;
  const { headers } = request;
  for (let i = request.entry.loggedHeaders.length; i + 1 < headers.length; i += 2) {
    size += delimitedSize(headerSize(repeated(headers[i]!).length, stringSize(headers[i + 1]!)));
  }
  if (request.body.length > 0) size += delimitedSize(request.body.length);
  const raw = attempt.responseHeaders;
  if (raw) for (let i = 0; i + 1 < raw.length; i += 2) size += delimitedSize(headerSize(raw[i]!.length, raw[i + 1]!.length));
  const body = attempt.responseBody;
  if (body && body.length > 0) size += delimitedSize(body.length);
  if (attempt.responseBodyTruncated) size += 2;
  return size;
}

function writeAttempt(out: Out, entry: DeliveredEntry, exchange: number): void {
  const { attempt } = entry;
  const request = attempt.request;
  out.repeated(tagOf(A.DESTINATION_ID, 2), entry.destinationId);
  out.text(tagOf(A.MESSAGE_ID, 2), entry.messageId);
  out.repeated(tagOf(A.URL, 2), request?.entry.loggedUrl ?? "");
  out.varintField(tagOf(A.STATUS, 0), attempt.status);
  out.varintField(tagOf(A.LATENCY_MS, 0), attempt.latencyMs);
  out.varintField(tagOf(A.ATTEMPT, 0), entry.attemptNumber);
  out.tag(tagOf(A.AT, 2));
  out.varint(timestampSize(entry.atMs));
  const seconds = Math.floor(entry.atMs / 1000);
  out.varintField(tagOf(1, 0), seconds);
  out.varintField(tagOf(2, 0), (entry.atMs - seconds * 1000) * 1_000_000);
  out.bytes(tagOf(A.OUTCOME, 2), DELIVERED);
  out.repeated(tagOf(A.SOURCE_ID, 2), entry.sourceId);
  for (const id of attempt.batch?.messageIds ?? NO_IDS) {
    out.tag(tagOf(A.BATCH_MESSAGE_IDS, 2));
    out.varint(Buffer.byteLength(id));
    out.pos += out.buf.write(id, out.pos);
  }
  if (!request) return;
  out.tag(tagOf(A.EXCHANGE, 2));
  out.varint(exchange);
  out.bytes(tagOf(X.METHOD, 2), methodBytes(request));
  out.repeated(tagOf(X.URL, 2), request.entry.loggedUrl);
  out.raw(staticHeaders(request));
  const { headers } = request;
  for (let i = request.entry.loggedHeaders.length; i + 1 < headers.length; i += 2) {
    out.header(tagOf(X.REQUEST_HEADERS, 2), repeated(headers[i]!), loggedHeader(request, i + 1));
  }
  if (request.body.length > 0) out.bytes(tagOf(X.REQUEST_BODY, 2), request.body);
  const raw = attempt.responseHeaders;
  if (raw) for (let i = 0; i + 1 < raw.length; i += 2) out.header(tagOf(X.RESPONSE_HEADERS, 2), raw[i]!, raw[i + 1]!);
  const body = attempt.responseBody;
  if (body && body.length > 0) out.bytes(tagOf(X.RESPONSE_BODY, 2), body);
  if (attempt.responseBodyTruncated) out.varintField(tagOf(X.RESPONSE_BODY_TRUNCATED, 0), 1);
}

/** Writes into a buffer sized beforehand. */
class Out {
  constructor(
    readonly buf: Buffer,
    public pos = 0,
  ) {}

  tag(tag: number): void {
    this.buf[this.pos++] = tag; // every tag here fits one byte (fields 1-15)
  }

  varint(n: number): void {
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  varintField(tag: number, n: number): void {
    if (n === 0) return;
    this.tag(tag);
    this.varint(n);
  }

  text(tag: number, text: string): void {
    if (text.length === 0) return;
    this.tag(tag);
    this.varint(Buffer.byteLength(text));
    this.pos += this.buf.write(text, this.pos);
  }

  bytes(tag: number, bytes: Uint8Array): void {
    this.tag(tag);
    this.varint(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  repeated(tag: number, text: string): void {
    if (text.length > 0) this.bytes(tag, repeated(text));
  }

  raw(bytes: Uint8Array): void {
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** An HttpHeader field; name and value as text or as bytes already encoded. */
  header(tag: number, name: string | Buffer, value: string | Buffer): void {
    const nameLength = typeof name === "string" ? Buffer.byteLength(name) : name.length;
    const valueLength = typeof value === "string" ? Buffer.byteLength(value) : value.length;
    this.tag(tag);
    this.varint(headerSize(nameLength, valueLength));
    this.part(tagOf(H.NAME, 2), name, nameLength);
    this.part(tagOf(H.VALUE, 2), value, valueLength);
  }

  private part(tag: number, value: string | Buffer, length: number): void {
    if (length === 0) return;
    this.tag(tag);
    this.varint(length);
    if (typeof value === "string") this.buf.write(value, this.pos);
    else this.buf.set(value, this.pos);
    this.pos += length;
  }
}
