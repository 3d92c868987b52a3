import { DeliverPolicy, type StreamState } from "@nats-io/jetstream";
import { DeliveryAttempt, DeliveryAttempts } from "@switchyard/contracts";
import { AttemptFacts, attemptEntryRanges, attemptWithoutExchange, WireReader } from "@switchyard/wire";
import { ATTEMPT_LOG_FIRST_AT_HEADER, withOrderedConsumer, type BusNames } from "@switchyard/bus";
import { ServiceError } from "@switchyard/platform";
import type { LogReader, LogReaders } from "./log-readers.js";

/** The outcomes an attempt can have, as ListDeliveryAttempts filters them. */
export const ATTEMPT_OUTCOMES = ["delivered", "retryable", "permanent", "dead_lettered"] as const;

export interface AttemptQuery {
  destinationId?: string;
  messageId?: string;
  /** Empty for all. */
  outcomes: string[];
  since?: Date;
  before?: Date;
  limit: number;
  pageToken: string;
}

/**
 * Where a reader of the index stands: the entries still to read are those of
 * messages before `seq`, and those of message `seq` before `index` (in the
 * order they were written in; a message half read). `seq` 0: nothing left.
 */
interface Cursor {
  seq: number;
  index: number;
  /**
   * What the previous page found reading the index. The next page sizes its first window by it
   * instead of growing it from a guess over several rounds (each a request and, deep in the log,
   * the loading of file-store blocks).
   */
  density?: Density;
}

/**
 * What a page found reading the index: sequences per matching entry and per message of the
 * subject, in thousandths, and bytes per message read.
 */
interface Density {
  perEntry: number;
  perMessage: number;
  bytesPerMessage: number;
}

interface Found {
  attempt: DeliveryAttempt;
  /** Where the entry is: reading on from here (exclusive) continues after it. */
  position: Cursor;
}

/**
 * A failure is indexed a publish after its attempt and up to DELIVERY_ATTEMPT_LOG_LINGER_MS later,
 * and a delivered attempt up to twice that (its batch's linger, then the index's); a `before` page
 * looks at the headers of what is stored up to that much (plus this margin, for clocks and slow
 * publishes) after `before`.
 */
const STORE_MARGIN_MS = 250;
/**
 * Bytes one page reads at most. A filter no subject can serve (a message id, an outcome) over a
 * long stretch without matches returns a short page, with a next_page_token to read on from where
 * it stopped: every page stays fast, however sparse the filter.
 */
const SCAN_BYTES = 1024 * 1024;
/**
 * Index messages the first window of a page without a density hint reads (then windows grow). On
 * the failures stream, one attempt a message, it reads a page's worth.
 */
const FIRST_WINDOW = 2;
const TOKEN_VERSION = "a3";
/** Headers a first `before` page reads at most to skip index messages newer than `before`. */
const MAX_HEADER_SCAN = 5_000;
/** Headers one fetch of that scan asks for. */
const HEADER_BATCH = 128;

/**
 * Where pages read: the attempt log's index (AttemptIndex), many entries a message; or, for pages
 * of failure outcomes only, the delivery log itself, one failure a message, where no delivered
 * attempt (most of the index) has to be read past.
 */
interface Source {
  readonly failures: boolean;
  readonly stream: string;
  subject(destinationId: string): string;
}

/**
 * Reads the attempt log (see DeliveryLog) a page at a time, newest first, from
 * its index (AttemptIndex) or its failures (see Source), without reading the
 * whole of it: the stream is read backwards from where the previous page
 * stopped, in windows of sequences that grow while a filter is sparse (a
 * destination is a subject filter the server applies; the subject's last
 * sequence is where its first page starts). Pages are keyset pages: the token
 * holds the position, so nothing is skipped or repeated as the log grows. An
 * entry's attempt_id says where the whole attempt (its exchange) is kept, for
 * `get`.
 */
export class AttemptPages {
  constructor(
    private readonly readers: LogReaders,
    private readonly names: BusNames,
    /** DELIVERY_ATTEMPT_LOG_LINGER_MS. */
    private readonly lingerMs = 200,
  ) {}

  async list(query: AttemptQuery): Promise<{ attempts: DeliveryAttempt[]; nextPageToken: string }> {
    for (const outcome of query.outcomes) {
      if (!(ATTEMPT_OUTCOMES as readonly string[]).includes(outcome)) {
        throw new ServiceError("INVALID_ARGUMENT", `outcomes: "${outcome}" is not one of ${ATTEMPT_OUTCOMES.join(", ")}`);
      }
    }
    if (query.since && query.before && query.since.getTime() >= query.before.getTime()) {
      throw new ServiceError("INVALID_ARGUMENT", "since: must be earlier than before");
    }
    const failuresOnly = query.outcomes.length > 0 && !query.outcomes.includes("delivered");
    const source: Source = failuresOnly
      ? { failures: true, stream: this.names.deliveryLogStream, subject: this.names.deliveryLogSubject }
      : { failures: false, stream: this.names.attemptIndexStream, subject: this.names.attemptIndexSubject };
    const state = this.readers.reader(0).then(async ({ jsm }) => (await jsm.streams.info(source.stream)).state);
    const cursor = query.pageToken ? decodeToken(query.pageToken, source) : await this.start(query, source, state);
    if (cursor.seq === 0) return { attempts: [], nextPageToken: "" };
    const { found, rest } = await this.readBack(cursor, query, source, await state);
    // A window's last message can hold more than the page: the position then moves past exactly what it takes.
    const page = found.slice(0, query.limit);
    const next = found.length > query.limit ? page.at(-1)!.position : rest;
    return { attempts: page.map((entry) => entry.attempt), nextPageToken: next.seq > 0 ? encodeToken(next, source) : "" };
  }

  /** One attempt with its exchange, from the log stream its attempt_id names. */
  async get(attemptId: string): Promise<DeliveryAttempt> {
    const id = parseAttemptId(attemptId);
    const { jsm } = await this.readers.reader(0);
    const stream = id.side === "failed" ? this.names.deliveryLogStream : this.names.deliveredLogStream;
    const stored = await jsm.direct.getMessage(stream, { seq: id.seq }).catch(() => null);
    if (!stored) throw new ServiceError("NOT_FOUND", `attempt_id: no attempt ${attemptId} in the log (expired, or never there)`);
    const attempt = id.side === "failed" ? DeliveryAttempt.decode(stored.data) : DeliveryAttempts.decode(stored.data).attempts[id.index];
    if (!attempt) throw new ServiceError("NOT_FOUND", `attempt_id: no attempt ${attemptId} in the log`);
    return { ...attempt, attemptId };
  }

  /** Where a first page starts: after the stream's last message (of the destination), or at `before`. */
  private async start(query: AttemptQuery, source: Source, state: Promise<StreamState>): Promise<Cursor> {
    const reader = await this.readers.reader(0);
    const { stream } = source;
    const subject = query.destinationId ? source.subject(query.destinationId) : undefined;
    let end: number;
    if (subject) {
      const last = await reader.jsm.streams
        .getMessage(stream, { last_by_subj: subject })
        .catch((error: unknown) => (isNotFound(error) ? null : Promise.reject(error)));
      if (!last) return NONE;
      end = last.seq + 1;
    } else {
      const { messages, last_seq } = await state;
      if (messages === 0) return NONE;
      end = last_seq + 1;
    }
    if (query.before) {
      const beforeMs = query.before.getTime();
      // A failure is stored a publish after it happened: past the margin, nothing older is stored.
      const at = source.failures
        ? await this.firstStoredAtOrAfter(reader, stream, beforeMs + STORE_MARGIN_MS)
        : await this.endBefore(reader, subject, beforeMs, end);
      if (at !== undefined) end = Math.min(end, at);
    }
    return { seq: end, index: 0 };
  }

  /**
   * Where reading back for attempts before `beforeMs` starts. Index messages stored before
   * `beforeMs` hold only older attempts; one stored up to two lingers (and STORE_MARGIN_MS) later
   * may hold some. Their Switchyard-First-At headers (the earliest attempt each holds) say which:
   * the page starts after the last message (of the subject, if given) with an older attempt, found
   * by reading that stretch's headers only. Undefined: nothing is stored from `beforeMs` on.
   */
  private async endBefore(reader: LogReader, subject: string | undefined, beforeMs: number, end: number): Promise<number | undefined> {
    const stream = this.names.attemptIndexStream;
    const latestMs = beforeMs + STORE_MARGIN_MS + 2 * this.lingerMs;
    const scanned = await withOrderedConsumer(
      reader.js,
      stream,
      { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(beforeMs).toISOString(), headers_only: true },
      async (consumer): Promise<{ end: number | undefined } | undefined> => {
        const pending = (await consumer.info(true)).num_pending;
        if (pending === 0) return { end: undefined };
        const wanted = Math.min(pending, MAX_HEADER_SCAN);
        let start: number | undefined;
        let older: number | undefined;
        let read = 0;
        // In batches: the stretch is usually a few hundred messages, and the server sends (loading
        // the file-store blocks that hold them) all a fetch asks for, even those past the stretch.
        while (read < wanted) {
          const batch = Math.min(HEADER_BATCH, wanted - read);
          let got = 0;
          for await (const message of await consumer.fetch({ max_messages: batch, expires: 5_000 })) {
            read++;
            got++;
            start ??= message.seq;
            if (message.seq >= end || message.info.timestampNanos / 1e6 >= latestMs) return { end: older ?? start };
            if (subject === undefined || message.subject === subject) {
              const firstAt = Number(message.headers?.get(ATTEMPT_LOG_FIRST_AT_HEADER) || Number.NaN);
              if (!(firstAt >= beforeMs)) older = message.seq + 1;
            }
            if (got === batch) break;
          }
          if (got < batch) break;
        }
        return read === pending && start !== undefined ? { end: older ?? start } : undefined;
      },
    );
    // Undefined: the stretch is longer than a page reads headers of; bound it by stored time alone.
    return scanned ? scanned.end : this.firstStoredAtOrAfter(reader, stream, latestMs);
  }

  /**
   * The sequence of the first message stored at or after `ms`, undefined when there is none. The
   * server finds it: a consumer that starts at a time looks it up block by block from the blocks'
   * own time ranges, loading one block, where a search by direct gets from here loaded one per
   * probe. Headers only: the message's sequence is all that is wanted.
   */
  private async firstStoredAtOrAfter(reader: LogReader, stream: string, ms: number): Promise<number | undefined> {
    return withOrderedConsumer(
      reader.js,
      stream,
      { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(ms).toISOString(), headers_only: true },
      async (consumer) => {
        if ((await consumer.info(true)).num_pending === 0) return undefined;
        const first = await consumer.next({ expires: 5_000 });
        return first?.seq;
      },
    );
  }

  /**
   * More than `query.limit` matching entries if there are, newest first, from before `cursor`; and
   * where reading stopped (NONE once the stream's start, or `since`, is reached).
   */
  private async readBack(
    cursor: Cursor,
    query: AttemptQuery,
    source: Source,
    state: StreamState,
  ): Promise<{ found: Found[]; rest: Cursor }> {
    const { jsm } = await this.readers.reader(0);
    const { stream } = source;
    const filter = new EntryFilter(query);
    const found: Found[] = [];
    const sinceMs = query.since?.getTime();
    const take = (seq: number, data: Uint8Array, below: number) => {
      const reader = new WireReader(data);
      if (source.failures) {
        if (filter.matches(reader, 0, data.length))
          found.push({ attempt: { ...attemptWithoutExchange(data), attemptId: `f.${seq}` }, position: { seq, index: 0 } });
        return;
      }
      const ranges = attemptEntryRanges(data);
      for (let index = Math.min(below, ranges.length / 2) - 1; index >= 0; index--) {
        const start = ranges[2 * index]!;
        const end = ranges[2 * index + 1]!;
        // Only the entries a page keeps are decoded.
        if (filter.matches(reader, start, end))
          found.push({ attempt: DeliveryAttempt.decode(data.subarray(start, end)), position: { seq, index } });
      }
    };

    if (cursor.index > 0) {
      const stored = await jsm.direct.getMessage(stream, { seq: cursor.seq }).catch(() => null);
      if (stored) take(cursor.seq, stored.data, cursor.index);
    }
    const subject = query.destinationId ? source.subject(query.destinationId) : undefined;
    const first = state.first_seq;
    // A destination's share of the stream, guessed as an even one (asking the server for the subject's
    // count costs it a pass over every block); the window then grows by what the subject really holds.
    const share = subject ? 1 / Math.max(state.num_subjects ?? 1, 1) : 1;
    let high = cursor.seq;
    const hint = cursor.density;
    const firstShare = hint ? 1000 / hint.perMessage : share;
    // Sized by the hint, the window holds the page with a quarter to spare, but no more of the
    // subject's bytes than a page reads at most (messages differ in size along the stream: by the
    // size of those the last page read).
    const messageBytes = hint?.bytesPerMessage ?? state.bytes / Math.max(state.messages, 1);
    let window = hint
      ? Math.max(1, Math.min(Math.ceil((query.limit * hint.perEntry * 1.25) / 1000), Math.ceil(SCAN_BYTES / messageBytes / firstShare)))
      : Math.ceil((source.failures ? query.limit + 1 : FIRST_WINDOW) / share);
    let scanned = 0;
    let looked = 0;
    let read = 0;
    let largest = 0;
    while (found.length < query.limit && high > first && scanned < SCAN_BYTES) {
      const low = Math.max(first, high - window);
      // Messages of the subject in the window, about: its share of those looked at so far (or the guess).
      const expected = (high - low) * (looked > 0 ? read / looked : firstShare);
      const messages = await this.readWindow(stream, subject, low, high, expected);
      read += messages.length;
      let passedSince = false;
      for (let i = messages.length - 1; i >= 0; i--) {
        const message = messages[i]!;
        // Stored times only grow along the stream, and every entry is stored at or after its own time.
        if (sinceMs !== undefined && message.storedMs < sinceMs) {
          passedSince = true;
          break;
        }
        scanned += message.data.length;
        largest = Math.max(largest, message.data.length);
        take(message.seq, message.data, Number.MAX_SAFE_INTEGER);
      }
      looked += high - low;
      high = low;
      if (passedSince) return { found, rest: NONE };
      // Grow the window by what the filter let through so far (×2 at least, ×16 at most), to no
      // more of the subject's messages than the bytes the page has left to read would hold at the
      // size of the largest read so far (messages differ in size along the stream).
      const missing = query.limit - found.length;
      const seen = Math.max(read / looked, 1e-9);
      const bytesBound = Math.floor((SCAN_BYTES - scanned) / Math.max(largest, scanned / Math.max(read, 1)) / seen);
      if (bytesBound < 1) break;
      window = Math.ceil(Math.min(Math.max((missing * looked) / Math.max(found.length, 1), 2 * window), 16 * window, bytesBound));
    }
    // Everything from `high` up was looked at: a page that takes every entry found reads on from there.
    // Per entry from the newest one found on: a stretch without any before it (the margin after
    // `before`, say) says nothing of how dense the rest is. Finding nothing says only that the page
    // read too little: the next page grows its window from the guess again.
    const density =
      found.length > 0 && read > 0
        ? {
            perEntry: thousandths(found[0]!.position.seq + 1 - high, found.length),
            perMessage: thousandths(looked, read),
            bytesPerMessage: Math.max(1, Math.round(scanned / read)),
          }
        : undefined;
    for (const entry of found) entry.position.density = density;
    return { found, rest: high > first ? { seq: high, index: 0, density } : NONE };
  }

  /** The messages (of `subject`, if given) with sequences in [low, high), oldest first. */
  private async readWindow(
    stream: string,
    subject: string | undefined,
    low: number,
    high: number,
    expected: number,
  ): Promise<StoredEntry[]> {
    if (subject) return this.readSubjectWindow(stream, subject, low, high, expected);
    const { js } = await this.readers.reader(0);
    // No filter: an ordered consumer streams the window (its pending count costs the server nothing here).
    return withOrderedConsumer(js, stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: low }, async (consumer) => {
      const pending = (await consumer.info(true)).num_pending;
      const wanted = Math.min(pending, high - low);
      const messages: StoredEntry[] = [];
      if (wanted === 0) return messages;
      const batch = await consumer.fetch({ max_messages: wanted, expires: 5_000 });
      for await (const message of batch) {
        if (message.seq >= high) break;
        messages.push({ seq: message.seq, storedMs: message.info.timestampNanos / 1e6, data: message.data });
        if (messages.length === wanted || message.info.pending === 0) break;
      }
      return messages;
    });
  }

  /**
   * One subject's messages in [low, high), by direct gets of the next message of the subject from
   * a sequence on: the server skips blocks without the subject. (A consumer filtered by subject
   * would do too, but nats-server 2.9 counts its pending messages from the start sequence to the
   * end of the stream when it is made, which grows with how deep the page is.) The window is cut
   * into parts read side by side, one per MESSAGES_PER_WALK expected messages: a part's last get
   * runs on to the subject's next message past the part, loading the file-store block that holds
   * it, so a sparse subject is read in few parts.
   */
  private async readSubjectWindow(stream: string, subject: string, low: number, high: number, expected: number): Promise<StoredEntry[]> {
    const walks = Math.min(MAX_WALKS, Math.max(1, Math.ceil(expected / MESSAGES_PER_WALK)));
    const size = Math.ceil((high - low) / walks);
    const walk = async (index: number, from: number, to: number): Promise<StoredEntry[]> => {
      // Walks over connections in turn: the server loads the blocks of different walks side by side.
      const { jsm } = await this.readers.reader(index);
      const entries: StoredEntry[] = [];
      for (let seq = from; seq < to;) {
        const stored = await jsm.direct
          .getMessage(stream, { seq, next_by_subj: subject })
          .catch((error: unknown) => (isNotFound(error) ? null : Promise.reject(error)));
        if (!stored || stored.seq >= to) break;
        entries.push({ seq: stored.seq, storedMs: stored.time.getTime(), data: stored.data });
        seq = stored.seq + 1;
      }
      return entries;
    };
    const parts: Promise<StoredEntry[]>[] = [];
    for (let from = low; from < high; from += size) parts.push(walk(parts.length, from, Math.min(from + size, high)));
    return (await Promise.all(parts)).flat();
  }
}

const NONE: Cursor = { seq: 0, index: 0 };

interface StoredEntry {
  seq: number;
  storedMs: number;
  data: Uint8Array;
}

/** Direct-get walks one subject window is read with side by side, at most. */
const MAX_WALKS = 32;
/** Messages of the subject a walk is expected to read. */
const MESSAGES_PER_WALK = 2;

/**
 * What a page keeps: the query's outcomes, call and times (a destination is the index subject
 * read), judged from an entry's bytes, so that only the entries kept are decoded.
 */
class EntryFilter {
  private readonly outcomes: Buffer[];
  private readonly messageId: Buffer | undefined;
  private readonly sinceMs: number;
  private readonly beforeMs: number;
  private readonly facts = new AttemptFacts();

  constructor(private readonly query: AttemptQuery) {
    this.outcomes = query.outcomes.map((outcome) => Buffer.from(outcome));
    this.messageId = query.messageId ? Buffer.from(query.messageId) : undefined;
    this.sinceMs = query.since?.getTime() ?? -Infinity;
    this.beforeMs = query.before?.getTime() ?? Infinity;
  }

  /** Whether the entry at [start, end) of the reader's bytes is kept. */
  matches(reader: WireReader, start: number, end: number): boolean {
    const { facts } = this;
    if (!facts.read(reader, start, end)) return this.matchesDecoded(DeliveryAttempt.decode(reader.buf.subarray(start, end)));
    return (
      facts.atMs >= this.sinceMs &&
      facts.atMs < this.beforeMs &&
      (this.outcomes.length === 0 || this.outcomes.some((outcome) => facts.outcomeIs(outcome))) &&
      (this.messageId === undefined || facts.messageIdIs(this.messageId))
    );
  }

  private matchesDecoded(attempt: DeliveryAttempt): boolean {
    const atMs = attempt.at?.getTime() ?? 0;
    const { query } = this;
    return (
      atMs >= this.sinceMs &&
      atMs < this.beforeMs &&
      (query.outcomes.length === 0 || query.outcomes.includes(attempt.outcome)) &&
      (!query.messageId || attempt.messageId === query.messageId)
    );
  }
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && /no message found|not found/i.test(error.message);
}

/** `looked` per `count`, in thousandths (1 to 1e12). */
function thousandths(looked: number, count: number): number {
  return Math.min(Math.max(1, Math.round((1000 * looked) / Math.max(count, 1))), 1e12);
}

/** Tokens name the stream they hold a position in: `i` the index, `f` the failures (see Source). */
const tokenKind = (failures: boolean) => `${TOKEN_VERSION}${failures ? "f" : "i"}`;

function encodeToken(cursor: Cursor, source: Source): string {
  const { density: d } = cursor;
  const density = d ? `${d.perEntry}.${d.perMessage}.${d.bytesPerMessage}` : "0.0.0";
  return Buffer.from(`${tokenKind(source.failures)}.${cursor.seq}.${cursor.index}.${density}`).toString("base64url");
}

function decodeToken(token: string, source: Source): Cursor {
  const refuse = (why = "not a next_page_token of ListDeliveryAttempts") => new ServiceError("INVALID_ARGUMENT", `page_token: ${why}`);
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) throw refuse();
  const parts = Buffer.from(token, "base64url").toString().split(".");
  if (parts[0] === tokenKind(!source.failures)) throw refuse("made for other outcomes: give the filters of the first page");
  if (parts[0] !== tokenKind(source.failures) || parts.length !== 6 || !parts.slice(1).every((part) => /^(0|[1-9]\d{0,15})$/.test(part))) {
    throw refuse();
  }
  const numbers = parts.slice(1).map(Number);
  if (!numbers.every((n) => Number.isSafeInteger(n))) throw refuse();
  const [seq, index, perEntry, perMessage, bytesPerMessage] = numbers as [number, number, number, number, number];
  const density = perEntry > 0 && perMessage > 0 && bytesPerMessage > 0 ? { perEntry, perMessage, bytesPerMessage } : undefined;
  return { seq, index, density };
}

function parseAttemptId(attemptId: string): { side: "failed" | "delivered"; seq: number; index: number } {
  const match = /^(?:f\.([1-9]\d{0,15})|d\.([1-9]\d{0,15})\.(0|[1-9]\d{0,5}))$/.exec(attemptId);
  if (!match)
    throw new ServiceError("INVALID_ARGUMENT", "attempt_id: not an attempt_id of the attempt log (as ListDeliveryAttempts gives them)");
  return match[1]
    ? { side: "failed", seq: Number(match[1]), index: 0 }
    : { side: "delivered", seq: Number(match[2]), index: Number(match[3]) };
}
