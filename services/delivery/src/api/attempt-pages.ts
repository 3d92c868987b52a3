import { DeliverPolicy, type StreamState } from "@nats-io/jetstream";
import { DeliveryAttempt, DeliveryAttemptField, DeliveryAttempts, DeliveryAttemptsField } from "@switchyard/contracts";
import { lengthTag, WireReader } from "@switchyard/wire";
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
   * What the previous page found reading the index: sequences per matching entry and per message
   * of the subject, in thousandths. The next page sizes its first window by them instead of
   * growing it from a guess over several rounds (each a request and, deep in the log, the loading
   * of file-store blocks).
   */
  density?: { perEntry: number; perMessage: number };
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
 * Bytes of index one page reads at most. A filter no subject can serve (a message id, an outcome)
 * over a long stretch without matches returns a short page, with a next_page_token to read on
 * from where it stopped: every page stays fast, however sparse the filter.
 */
const SCAN_BYTES = 1024 * 1024;
/** Messages the first window reads (each holds up to DELIVERY_ATTEMPT_LOG_BATCH entries). */
const FIRST_WINDOW = 2;
const TOKEN_VERSION = "a3";
/** Headers a first `before` page reads at most to skip index messages newer than `before`. */
const MAX_HEADER_SCAN = 5_000;

/**
 * Reads the attempt log (see DeliveryLog) a page at a time, newest first, from
 * its index (AttemptIndex), without reading the whole of it: the index
 * is read backwards from where the previous page stopped, in windows of
 * sequences that grow while a filter is sparse (a destination is a subject
 * filter the server applies; the subject's last sequence is where its first
 * page starts). Pages are keyset pages: the token holds the position, so
 * nothing is skipped or repeated as the log grows. An entry's attempt_id says
 * where the whole attempt (its exchange) is kept, for `get`.
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
    const state = this.readers.reader(0).then(async ({ jsm }) => (await jsm.streams.info(this.names.attemptIndexStream)).state);
    const cursor = query.pageToken ? decodeToken(query.pageToken) : await this.start(query, state);
    if (cursor.seq === 0) return { attempts: [], nextPageToken: "" };
    const { found, rest } = await this.readBack(cursor, query, entryFilter(query), await state);
    // A window's last message can hold more than the page: the position then moves past exactly what it takes.
    const page = found.slice(0, query.limit);
    const next = found.length > query.limit ? page.at(-1)!.position : rest;
    return { attempts: page.map((entry) => entry.attempt), nextPageToken: next.seq > 0 ? encodeToken(next) : "" };
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

  /** Where a first page starts: after the index's last message (of the destination), or at `before`. */
  private async start(query: AttemptQuery, state: Promise<StreamState>): Promise<Cursor> {
    const reader = await this.readers.reader(0);
    const stream = this.names.attemptIndexStream;
    const subject = query.destinationId ? this.names.attemptIndexSubject(query.destinationId) : undefined;
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
      const at = await this.endBefore(reader, subject, query.before.getTime(), end);
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
   * More than `query.limit` matching entries if there are, newest first, from before `cursor`; and
   * where reading stopped (NONE once the stream's start, or `since`, is reached).
   */
  private async readBack(
    cursor: Cursor,
    query: AttemptQuery,
    matches: (entry: EntryFacts) => boolean,
    state: StreamState,
  ): Promise<{ found: Found[]; rest: Cursor }> {
    const { jsm } = await this.readers.reader(0);
    const stream = this.names.attemptIndexStream;
    const found: Found[] = [];
    const sinceMs = query.since?.getTime();
    const take = (seq: number, data: Uint8Array, below: number) => {
      const entries = indexEntries(data);
      for (let index = Math.min(below, entries.length) - 1; index >= 0; index--) {
        const entry = entries[index]!;
        // Only the entries a page keeps are decoded.
        if (matches(entry))
          found.push({ attempt: DeliveryAttempt.decode(data.subarray(entry.start, entry.end)), position: { seq, index } });
      }
    };

    if (cursor.index > 0) {
      const stored = await jsm.direct.getMessage(stream, { seq: cursor.seq }).catch(() => null);
      if (stored) take(cursor.seq, stored.data, cursor.index);
    }
    const subject = query.destinationId ? this.names.attemptIndexSubject(query.destinationId) : undefined;
    const first = state.first_seq;
    // A destination's share of the stream, guessed as an even one (asking the server for the subject's
    // count costs it a pass over every block); the window then grows by what the subject really holds.
    const share = subject ? 1 / Math.max(state.num_subjects ?? 1, 1) : 1;
    let high = cursor.seq;
    const hint = cursor.density;
    const firstShare = hint ? 1000 / hint.perMessage : share;
    // Sized by the hint, the window holds the page with a quarter to spare, but no more of the
    // subject's bytes than a page reads at most.
    const messageBytes = state.bytes / Math.max(state.messages, 1);
    let window = hint
      ? Math.max(1, Math.min(Math.ceil((query.limit * hint.perEntry * 1.25) / 1000), Math.ceil(SCAN_BYTES / messageBytes / firstShare)))
      : Math.ceil(FIRST_WINDOW / share);
    let scanned = 0;
    let looked = 0;
    let read = 0;
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
        take(message.seq, message.data, Number.MAX_SAFE_INTEGER);
      }
      looked += high - low;
      high = low;
      if (passedSince) return { found, rest: NONE };
      // Grow the window by what the filter let through so far (×2 at least, ×16 at most), to no
      // more of the subject's messages than the bytes a page reads at most.
      const missing = query.limit - found.length;
      const bytesBound = Math.ceil(SCAN_BYTES / messageBytes / Math.max(read / looked, 1e-9));
      window = Math.ceil(Math.min(Math.max((missing * looked) / Math.max(found.length, 1), 2 * window), 16 * window, bytesBound));
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

const ATTEMPTS_TAG = lengthTag(DeliveryAttemptsField.ATTEMPTS);

/** Where an index entry lies in its message, and what a filter looks at, read without decoding it. */
interface EntryFacts {
  start: number;
  end: number;
  atMs: number;
  /** Its outcome's and message id's bytes (views of the message). */
  outcome: Uint8Array;
  messageId: Uint8Array;
}

/** Length-delimited fields of DeliveryAttempt up to `outcome`, as WireReader.fieldRanges records them. */
const FACT_SLOTS = 2 * (DeliveryAttemptField.OUTCOME + 1);

/** The entries of an index message, as written: oldest first (see AttemptIndex). */
function indexEntries(bytes: Uint8Array): EntryFacts[] {
  const reader = new WireReader(bytes);
  const end = bytes.length;
  const entries: EntryFacts[] = [];
  const slots = new Int32Array(FACT_SLOTS);
  while (reader.pos < end) {
    const tag = reader.tag(end);
    if (tag !== ATTEMPTS_TAG) {
      reader.skipField(tag, end);
      continue;
    }
    const entryEnd = reader.delimitedEnd(end);
    const start = reader.pos;
    entries.push(entryFacts(bytes, start, entryEnd, reader, slots));
    reader.pos = entryEnd;
  }
  return entries;
}

function entryFacts(bytes: Uint8Array, start: number, end: number, reader: WireReader, slots: Int32Array): EntryFacts {
  const A = DeliveryAttemptField;
  try {
    reader.fieldRanges(end, slots);
    const field = (number: number) => (slots[2 * number]! < 0 ? EMPTY : bytes.subarray(slots[2 * number], slots[2 * number + 1]));
    const at = slots[2 * A.AT]!;
    return {
      start,
      end,
      atMs: at < 0 ? 0 : reader.timestampMillis(at, slots[2 * A.AT + 1]!),
      outcome: field(A.OUTCOME),
      messageId: field(A.MESSAGE_ID),
    };
  } catch {
    // An encoding the quick reader leaves to the decoder (none the writer makes).
    const attempt = DeliveryAttempt.decode(bytes.subarray(start, end));
    return {
      start,
      end,
      atMs: attempt.at?.getTime() ?? 0,
      outcome: Buffer.from(attempt.outcome),
      messageId: Buffer.from(attempt.messageId),
    };
  }
}

const EMPTY = new Uint8Array(0);

/** What a page keeps: the query's outcomes, call and times. (A destination is the index subject read.) */
function entryFilter(query: AttemptQuery): (entry: EntryFacts) => boolean {
  const outcomes = query.outcomes.map((outcome) => Buffer.from(outcome));
  const messageId = query.messageId ? Buffer.from(query.messageId) : undefined;
  const sinceMs = query.since?.getTime() ?? -Infinity;
  const beforeMs = query.before?.getTime() ?? Infinity;
  return (entry) =>
    entry.atMs >= sinceMs &&
    entry.atMs < beforeMs &&
    (outcomes.length === 0 || outcomes.some((outcome) => sameBytes(entry.outcome, outcome))) &&
    (messageId === undefined || sameBytes(entry.messageId, messageId));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && /no message found|not found/i.test(error.message);
}

/** `looked` per `count`, in thousandths (1 to 1e12). */
function thousandths(looked: number, count: number): number {
  return Math.min(Math.max(1, Math.round((1000 * looked) / Math.max(count, 1))), 1e12);
}

function encodeToken(cursor: Cursor): string {
  const density = cursor.density ? `${cursor.density.perEntry}.${cursor.density.perMessage}` : "0.0";
  return Buffer.from(`${TOKEN_VERSION}.${cursor.seq}.${cursor.index}.${density}`).toString("base64url");
}

function decodeToken(token: string): Cursor {
  const refuse = () => new ServiceError("INVALID_ARGUMENT", "page_token: not a next_page_token of ListDeliveryAttempts");
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) throw refuse();
  const parts = Buffer.from(token, "base64url").toString().split(".");
  if (parts[0] !== TOKEN_VERSION || parts.length !== 5 || !parts.slice(1).every((part) => /^(0|[1-9]\d{0,15})$/.test(part))) throw refuse();
  const [seq, index, perEntry, perMessage] = parts.slice(1).map(Number) as [number, number, number, number];
  if (![seq, index, perEntry, perMessage].every((n) => Number.isSafeInteger(n))) throw refuse();
  return { seq, index, density: perEntry > 0 && perMessage > 0 ? { perEntry, perMessage } : undefined };
}

function parseAttemptId(attemptId: string): { side: "failed" | "delivered"; seq: number; index: number } {
  const match = /^(?:f\.([1-9]\d{0,15})|d\.([1-9]\d{0,15})\.(0|[1-9]\d{0,5}))$/.exec(attemptId);
  if (!match)
    throw new ServiceError("INVALID_ARGUMENT", "attempt_id: not an attempt_id of the attempt log (as ListDeliveryAttempts gives them)");
  return match[1]
    ? { side: "failed", seq: Number(match[1]), index: 0 }
    : { side: "delivered", seq: Number(match[2]), index: Number(match[3]) };
}
