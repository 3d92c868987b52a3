import { DeliverPolicy, type StreamState } from "@nats-io/jetstream";
import { DeliveryAttempt, DeliveryAttemptField, DeliveryAttempts, DeliveryAttemptsField } from "@switchyard/contracts";
import { lengthTag, WireReader } from "@switchyard/wire";
import { ATTEMPT_LOG_FIRST_AT_HEADER, withOrderedConsumer, type BusNames } from "@switchyard/bus";
import { ServiceError } from "@switchyard/platform";
import type { LogReader, LogReaders } from "./log-readers.js";

/** The outcomes an attempt can have, as ListDeliveryAttempts filters them. */
export const ATTEMPT_OUTCOMES = ["delivered", "retryable", "permanent", "dead_lettered"] as const;
const FAILURE_OUTCOMES = new Set<string>(["retryable", "permanent", "dead_lettered"]);

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
 * Where a reader of one log stream stands: the entries still to read are those
 * of messages before `seq`, and those of message `seq` before `index` (a
 * delivered batch half read). `seq` 0: nothing left.
 */
interface Cursor {
  seq: number;
  index: number;
  /**
   * What the previous page found reading this stream: sequences per matching entry and per
   * message of the subject, in thousandths. The next page sizes its first window by them instead
   * of growing it from a guess over several rounds (each a request and, deep in the log, the
   * loading of file-store blocks).
   */
  density?: { perEntry: number; perMessage: number };
}

interface Found {
  attempt: DeliveryAttempt;
  atMs: number;
  /** Where the entry is: reading on from here (exclusive) continues after it. */
  position: Cursor;
}

/** The two streams of the attempt log: failures and dead letters (one a message), delivered attempts (many a message). */
type Side = "failed" | "delivered";

/**
 * A failure is stored a publish after its attempt, and a delivered batch up to
 * DELIVERY_ATTEMPT_LOG_LINGER_MS (and a publish) after its first one: a `before` page looks at
 * what is stored up to that much (plus this margin, for clocks and slow publishes) after `before`.
 */
const STORE_MARGIN_MS = 250;
/**
 * Bytes of log one page reads at most on each stream. A filter no subject can serve (a message id,
 * an outcome) over a long stretch without matches returns a short page, with a next_page_token to
 * read on from where it stopped: every page stays fast, however sparse the filter.
 */
const SCAN_BYTES = 1024 * 1024;
/** Messages the first window reads on the failures stream, times the page size; windows grow ×4 while a filter finds too little. */
const FIRST_WINDOW_FACTOR = 1;
/** Messages the first window reads on the delivered stream (each holds up to DELIVERY_ATTEMPT_LOG_BATCH attempts). */
const FIRST_DELIVERED_WINDOW = 2;
const TOKEN_VERSION = "a2";
const PREVIOUS_TOKEN_VERSION = "a1";
/** Headers a first `before` page reads at most to skip delivered batches newer than `before`. */
const MAX_HEADER_SCAN = 5_000;

/**
 * Reads the attempt log (see DeliveryLog) a page at a time, newest first,
 * without reading the whole log: each stream is read backwards from where
 * the previous page stopped, in windows of sequences that grow while a
 * filter is sparse (a destination is a subject filter the server applies;
 * the subject's last sequence is where its first page starts), and the two
 * streams are merged by time. Pages are keyset pages: the token holds each
 * stream's position, so nothing is skipped or repeated as the log grows.
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
    const wanted = new Set(query.outcomes);
    const reads = {
      failed: wanted.size === 0 || query.outcomes.some((o) => FAILURE_OUTCOMES.has(o)),
      delivered: wanted.size === 0 || wanted.has("delivered"),
    };
    const states: StreamStates = new Map();
    const cursors = query.pageToken
      ? decodeToken(query.pageToken)
      : await Promise.all([
          reads.failed ? this.start("failed", query, states) : NONE,
          reads.delivered ? this.start("delivered", query, states) : NONE,
        ]).then(([failed, delivered]) => ({ failed, delivered }));
    const matches = (attempt: DeliveryAttempt, atMs: number) =>
      (wanted.size === 0 || wanted.has(attempt.outcome)) &&
      (!query.messageId || attempt.messageId === query.messageId) &&
      (!query.destinationId || attempt.destinationId === query.destinationId) &&
      (!query.since || atMs >= query.since.getTime()) &&
      (!query.before || atMs < query.before.getTime());
    const nothing = { found: [] as Found[], rest: NONE };
    const [failed, delivered] = await Promise.all([
      reads.failed && cursors.failed.seq > 0 ? this.readBack("failed", cursors.failed, query, matches, states) : nothing,
      reads.delivered && cursors.delivered.seq > 0 ? this.readBack("delivered", cursors.delivered, query, matches, states) : nothing,
    ]);

    // Merge, newest first; each stream's position moves past exactly what the page takes from it.
    const page: DeliveryAttempt[] = [];
    const next = { failed: failed.rest, delivered: delivered.rest };
    let f = 0;
    let d = 0;
    const fs = failed.found;
    const ds = delivered.found;
    while (page.length < query.limit && (f < fs.length || d < ds.length)) {
      const takeFailed = d >= ds.length || (f < fs.length && fs[f]!.atMs >= ds[d]!.atMs);
      const entry = takeFailed ? fs[f++]! : ds[d++]!;
      page.push(entry.attempt);
    }
    if (f < fs.length) next.failed = f > 0 ? fs[f - 1]!.position : cursors.failed;
    if (d < ds.length) next.delivered = d > 0 ? ds[d - 1]!.position : cursors.delivered;
    if (!reads.failed) next.failed = NONE;
    if (!reads.delivered) next.delivered = NONE;
    for (const attempt of page) attempt.exchange = undefined;
    const more = next.failed.seq > 0 || next.delivered.seq > 0;
    return { attempts: page, nextPageToken: more ? encodeToken(next) : "" };
  }

  /** One attempt with its exchange. */
  async get(attemptId: string): Promise<DeliveryAttempt> {
    const id = parseAttemptId(attemptId);
    const { jsm } = await this.readers.reader(0);
    const stored = await jsm.direct.getMessage(this.stream(id.side), { seq: id.seq }).catch(() => null);
    if (!stored) throw new ServiceError("NOT_FOUND", `attempt_id: no attempt ${attemptId} in the log (expired, or never there)`);
    const attempt = id.side === "failed" ? DeliveryAttempt.decode(stored.data) : DeliveryAttempts.decode(stored.data).attempts[id.index];
    if (!attempt) throw new ServiceError("NOT_FOUND", `attempt_id: no attempt ${attemptId} in the log`);
    return { ...attempt, attemptId };
  }

  /** A stream's state, asked of the server once per page (a first page's start and reading share it). */
  private streamState(side: Side, states: StreamStates): Promise<StreamState> {
    let state = states.get(side);
    if (!state) {
      state = this.readers.reader(SIDE_READER[side]).then(async ({ jsm }) => (await jsm.streams.info(this.stream(side))).state);
      states.set(side, state);
    }
    return state;
  }

  private stream(side: Side): string {
    return side === "failed" ? this.names.deliveryLogStream : this.names.deliveredLogStream;
  }

  private subject(side: Side, destinationId: string): string {
    return side === "failed" ? this.names.deliveryLogSubject(destinationId) : this.names.deliveredLogSubject(destinationId);
  }

  /** Where a first page starts on one stream: after its last message (of the destination), or at `before`. */
  private async start(side: Side, query: AttemptQuery, states: StreamStates): Promise<Cursor> {
    const reader = await this.readers.reader(SIDE_READER[side]);
    const { jsm } = reader;
    const stream = this.stream(side);
    let end: number;
    if (query.destinationId) {
      const last = await jsm.streams
        .getMessage(stream, { last_by_subj: this.subject(side, query.destinationId) })
        .catch((error: unknown) => (isNotFound(error) ? null : Promise.reject(error)));
      if (!last) return NONE;
      end = last.seq + 1;
    } else {
      const state = await this.streamState(side, states);
      if (state.messages === 0) return NONE;
      end = state.last_seq + 1;
    }
    if (query.before) {
      const subject = query.destinationId ? this.subject(side, query.destinationId) : undefined;
      const beforeMs = query.before.getTime();
      // A failure message is one attempt: reading the margin's back costs about what reading a
      // header of each would, so failures need no Switchyard-First-At.
      const at =
        side === "failed"
          ? await this.firstStoredAtOrAfter(reader, stream, beforeMs + STORE_MARGIN_MS)
          : await this.deliveredEndBefore(reader, subject, beforeMs, end);
      if (at !== undefined) end = Math.min(end, at);
    }
    return { seq: end, index: 0 };
  }

  /**
   * Where reading back for delivered attempts before `beforeMs` starts. Batches stored before
   * `beforeMs` hold only older attempts; one stored up to the linger (and STORE_MARGIN_MS) later
   * may hold some. Their Switchyard-First-At headers say which: the page starts after the last
   * batch (of the subject, if given) with an older attempt, found by reading that stretch's
   * headers only rather than decoding every batch in it. A batch without the header counts as
   * holding older attempts. Undefined: nothing is stored from `beforeMs` on.
   */
  private async deliveredEndBefore(
    reader: LogReader,
    subject: string | undefined,
    beforeMs: number,
    end: number,
  ): Promise<number | undefined> {
    const stream = this.names.deliveredLogStream;
    const latestMs = beforeMs + STORE_MARGIN_MS + this.lingerMs;
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
        for await (const message of await consumer.fetch({ max_messages: wanted, expires: 5_000 })) {
          read++;
          start ??= message.seq;
          if (message.seq >= end || message.info.timestampNanos / 1e6 >= latestMs) return { end: older ?? start };
          if (subject === undefined || message.subject === subject) {
            const firstAt = Number(message.headers?.get(ATTEMPT_LOG_FIRST_AT_HEADER) || Number.NaN);
            if (!(firstAt >= beforeMs)) older = message.seq + 1;
          }
          if (read === wanted) break;
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
   * Up to `query.limit` matching entries, newest first, from before `cursor`; and where reading
   * stopped (NONE once the stream's start, or `since`, is reached).
   */
  private async readBack(
    side: Side,
    cursor: Cursor,
    query: AttemptQuery,
    matches: (attempt: DeliveryAttempt, atMs: number) => boolean,
    states: StreamStates,
  ): Promise<{ found: Found[]; rest: Cursor }> {
    const { jsm } = await this.readers.reader(SIDE_READER[side]);
    const found: Found[] = [];
    const sinceMs = query.since?.getTime();
    const take = (seq: number, data: Uint8Array, below: number) => {
      if (side === "failed") {
        const attempt = withoutExchange(data, 0, data.length);
        const atMs = attempt.at?.getTime() ?? 0;
        if (matches(attempt, atMs)) found.push({ attempt: { ...attempt, attemptId: `f.${seq}` }, atMs, position: { seq, index: 0 } });
        return;
      }
      const ranges = attemptRanges(data);
      for (let index = Math.min(below, ranges.length / 2) - 1; index >= 0; index--) {
        const attempt = withoutExchange(data, ranges[2 * index]!, ranges[2 * index + 1]!);
        const atMs = attempt.at?.getTime() ?? 0;
        if (matches(attempt, atMs)) found.push({ attempt: { ...attempt, attemptId: `d.${seq}.${index}` }, atMs, position: { seq, index } });
      }
    };

    if (cursor.index > 0) {
      const stored = await jsm.direct.getMessage(this.stream(side), { seq: cursor.seq }).catch(() => null);
      if (stored) take(cursor.seq, stored.data, cursor.index);
    }
    const stream = this.stream(side);
    const subject = query.destinationId ? this.subject(side, query.destinationId) : undefined;
    const state = await this.streamState(side, states);
    const first = state.first_seq;
    // A destination's share of the stream, guessed as an even one (asking the server for the subject's
    // count costs it a pass over every block); the window then grows by what the subject really holds.
    const share = subject ? 1 / Math.max(state.num_subjects ?? 1, 1) : 1;
    let high = cursor.seq;
    const guess = Math.ceil((side === "failed" ? query.limit * FIRST_WINDOW_FACTOR : FIRST_DELIVERED_WINDOW) / share);
    const hint = cursor.density;
    const firstShare = hint ? 1000 / hint.perMessage : share;
    // Sized by the hint, the window holds the page with a quarter to spare, but no more of the
    // subject's bytes than a page reads at most.
    const messageBytes = state.bytes / Math.max(state.messages, 1);
    let window = hint
      ? Math.max(1, Math.min(Math.ceil((query.limit * hint.perEntry * 1.25) / 1000), Math.ceil(SCAN_BYTES / messageBytes / firstShare)))
      : guess;
    let scanned = 0;
    let looked = 0;
    let read = 0;
    while (found.length < query.limit && high > first && scanned < SCAN_BYTES) {
      const low = Math.max(first, high - window);
      // Messages of the subject in the window, about: its share of those looked at so far (or the guess).
      const expected = (high - low) * (looked > 0 ? read / looked : firstShare);
      const messages = await this.readWindow(side, stream, subject, low, high, expected);
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
        take(message.seq, message.data, Number.MAX_SAFE_INTEGER);
      }
      looked += high - low;
      high = low;
      if (passedSince) return { found, rest: NONE };
      // Grow the window by what the filter let through so far (×2 at least, ×16 at most).
      const missing = query.limit - found.length;
      window = Math.ceil(Math.min(Math.max((missing * looked) / Math.max(found.length, 1), 2 * window), 16 * window));
    }
    // Everything from `high` up was looked at: a page that takes every entry found reads on from there.
    // Per entry from the newest one found on: a stretch without any before it (the margin after
    // `before`, say) says nothing of how dense the rest is. Finding nothing says only that the page
    // read too little: the next page grows its window from the guess again.
    const density =
      found.length > 0 && read > 0
        ? { perEntry: thousandths(found[0]!.position.seq + 1 - high, found.length), perMessage: thousandths(looked, read) }
        : undefined;
    for (const entry of found) entry.position.density = density;
    return { found, rest: high > first ? { seq: high, index: 0, density } : NONE };
  }

  /** The messages (of `subject`, if given) with sequences in [low, high), oldest first. */
  private async readWindow(
    side: Side,
    stream: string,
    subject: string | undefined,
    low: number,
    high: number,
    expected: number,
  ): Promise<StoredEntry[]> {
    if (subject) return this.readSubjectWindow(side, stream, subject, low, high, expected);
    const { js } = await this.readers.reader(SIDE_READER[side]);
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
  private async readSubjectWindow(
    side: Side,
    stream: string,
    subject: string,
    low: number,
    high: number,
    expected: number,
  ): Promise<StoredEntry[]> {
    const walks = Math.min(MAX_WALKS, Math.max(1, Math.ceil(expected / MESSAGES_PER_WALK)));
    const size = Math.ceil((high - low) / walks);
    const walk = async (index: number, from: number, to: number): Promise<StoredEntry[]> => {
      // Walks over connections in turn: the server loads the blocks of different walks side by side.
      const { jsm } = await this.readers.reader(SIDE_READER[side] + index);
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

/** Stream states already asked for during one page, by side. */
type StreamStates = Map<Side, Promise<StreamState>>;

/** The reader (LogReaders) each stream is read over, so that the two are read side by side. */
const SIDE_READER: Record<Side, number> = { failed: 0, delivered: 1 };

interface StoredEntry {
  seq: number;
  storedMs: number;
  data: Uint8Array;
}

/** Direct-get walks one subject window is read with side by side, at most. */
const MAX_WALKS = 32;
/** Messages of the subject a walk is expected to read. */
const MESSAGES_PER_WALK = 2;

const ATTEMPTS_TAG = lengthTag(DeliveryAttemptsField.ATTEMPTS);
const EXCHANGE_TAG = lengthTag(DeliveryAttemptField.EXCHANGE);

/** Where each attempt of a DeliveryAttempts message lies: [start, end, start, end, …]. */
function attemptRanges(bytes: Uint8Array): number[] {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  const ranges: number[] = [];
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== ATTEMPTS_TAG) {
      reader.skipField(tag, end);
      continue;
    }
    const attemptEnd = reader.delimitedEnd(end);
    ranges.push(reader.pos, attemptEnd);
    reader.pos = attemptEnd;
  }
  return ranges;
}

/**
 * An attempt without its exchange, which pages leave out: the exchange (bodies, headers) is most
 * of an entry's bytes, and the writer puts it last, so the fields before it are decoded from a
 * view of the bytes and the rest is never read.
 */
function withoutExchange(bytes: Uint8Array, start: number, end: number): DeliveryAttempt {
  const reader = new WireReader(bytes, start);
  while (reader.pos < end) {
    const fieldStart = reader.pos;
    const tag = reader.tag(end);
    reader.skipField(tag, end);
    if (tag === EXCHANGE_TAG && reader.pos === end) return DeliveryAttempt.decode(bytes.subarray(start, fieldStart));
  }
  return { ...DeliveryAttempt.decode(bytes.subarray(start, end)), exchange: undefined };
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && /no message found|not found/i.test(error.message);
}

/** `looked` per `count`, in thousandths (1 to 1e12). */
function thousandths(looked: number, count: number): number {
  return Math.min(Math.max(1, Math.round((1000 * looked) / Math.max(count, 1))), 1e12);
}

function encodeToken(cursors: { failed: Cursor; delivered: Cursor }): string {
  const density = (cursor: Cursor) => (cursor.density ? `${cursor.density.perEntry}.${cursor.density.perMessage}` : "0.0");
  const text = `${TOKEN_VERSION}.${cursors.failed.seq}.${cursors.delivered.seq}.${cursors.delivered.index}.${density(cursors.failed)}.${density(cursors.delivered)}`;
  return Buffer.from(text).toString("base64url");
}

function decodeToken(token: string): { failed: Cursor; delivered: Cursor } {
  const refuse = () => new ServiceError("INVALID_ARGUMENT", "page_token: not a next_page_token of ListDeliveryAttempts");
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) throw refuse();
  const parts = Buffer.from(token, "base64url").toString().split(".");
  // Tokens of the version before density hints (4 parts) are still read.
  const known = (parts[0] === TOKEN_VERSION && parts.length === 8) || (parts[0] === PREVIOUS_TOKEN_VERSION && parts.length === 4);
  if (!known || !parts.slice(1).every((part) => /^(0|[1-9]\d{0,15})$/.test(part))) throw refuse();
  const numbers = parts.slice(1).map(Number);
  if (!numbers.every((n) => Number.isSafeInteger(n))) throw refuse();
  const [failed, delivered, index, failedPerEntry = 0, failedPerMessage = 0, deliveredPerEntry = 0, deliveredPerMessage = 0] =
    numbers as number[];
  const density = (perEntry: number, perMessage: number) => (perEntry > 0 && perMessage > 0 ? { perEntry, perMessage } : undefined);
  return {
    failed: { seq: failed!, index: 0, density: density(failedPerEntry, failedPerMessage) },
    delivered: { seq: delivered!, index: index!, density: density(deliveredPerEntry, deliveredPerMessage) },
  };
}

function parseAttemptId(attemptId: string): { side: Side; seq: number; index: number } {
  const match = /^(?:f\.([1-9]\d{0,15})|d\.([1-9]\d{0,15})\.(0|[1-9]\d{0,5}))$/.exec(attemptId);
  if (!match)
    throw new ServiceError("INVALID_ARGUMENT", "attempt_id: not an attempt_id of the attempt log (as ListDeliveryAttempts gives them)");
  return match[1]
    ? { side: "failed", seq: Number(match[1]), index: 0 }
    : { side: "delivered", seq: Number(match[2]), index: Number(match[3]) };
}
