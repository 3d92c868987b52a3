import type { JetStreamClient } from "@nats-io/jetstream";
import type { BusNames } from "@switchyard/bus";
import { AttemptLogPublisher } from "./attempt-log-publisher.js";
import { indexEntrySize, writeIndexEntry } from "@switchyard/wire";

/** One attempt's index entry until it is published. */
export interface IndexEntry {
  readonly atMs: number;
  /** Its DeliveryAttempt fields but the exchange (a view of bytes already encoded); unset while the attempt is being stored. */
  summary?: Uint8Array;
  attemptId?: string;
}

/** One destination's entries waiting to be published. */
interface Waiting {
  /** Oldest first (see push). */
  entries: IndexEntry[];
  /** Delivered batches of the destination being gathered or stored (see hold). */
  holds: number;
  /** Entries made up to this time are due, but wait for an earlier one still being stored (see reserve). */
  owedUntilMs: number;
  timer: NodeJS.Timeout | undefined;
}

/** An index message stays small, so that a page reads little more than it needs. */
const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * The attempt log's index (`<ns>.attemptindex.<destination>`): every attempt once stored on either
 * log stream, without its exchange and with its attempt_id (where it is kept), many of one
 * destination to a switchyard.v1.DeliveryAttempts message with Switchyard-First-At. Pages read the
 * index alone: at about a seventh of the log's bytes, the stretch of stream a page covers is a few
 * file-store blocks rather than dozens.
 *
 * Pages list a destination's entries newest first by reading messages backwards, each in time
 * order, so one message must not hold entries older than the next one's. A delivered batch is
 * indexed when it is stored, a linger after its first attempt; a failure, a publish after it
 * happened. So while a batch of the destination's delivered attempts is gathered or stored, its
 * failures wait (`hold`), and once the batch is stored they go out with its entries, up to its
 * newest attempt (`release`): later ones wait for the next batch, or the linger.
 */
export class AttemptIndex {
  private readonly waiting = new Map<string, Waiting>();
  private readonly publisher: AttemptLogPublisher;

  constructor(
    js: JetStreamClient,
    private readonly names: BusNames,
    /** How long a destination's first entry waits for more when no batch holds it (DELIVERY_ATTEMPT_LOG_LINGER_MS). */
    private readonly lingerMs: number,
    /** Counts entries that could not be indexed, with what went wrong. */
    private readonly lost: (entries: number, error: unknown, destinationId: string) => void,
  ) {
    this.publisher = new AttemptLogPublisher(js);
  }

  /** Adds a stored attempt's entry, published after the linger or with the batch that holds the destination. */
  add(destinationId: string, summary: Uint8Array, attemptId: string, atMs: number): void {
    this.push(destinationId, { atMs, summary, attemptId });
  }

  /**
   * Makes room for an attempt about to be stored (a failure), so that no entry made after it goes
   * out before it: the two log streams answer their publishes in no set order. Then `fill` it
   * once stored, or `drop` it.
   */
  reserve(destinationId: string, atMs: number): IndexEntry {
    const entry: IndexEntry = { atMs };
    this.push(destinationId, entry);
    return entry;
  }

  fill(destinationId: string, entry: IndexEntry, summary: Uint8Array, attemptId: string): void {
    entry.summary = summary;
    entry.attemptId = attemptId;
    const waiting = this.waiting.get(destinationId);
    if (waiting && waiting.owedUntilMs >= entry.atMs) this.publish(destinationId, waiting.owedUntilMs);
  }

  drop(destinationId: string, entry: IndexEntry): void {
    const waiting = this.waiting.get(destinationId);
    if (!waiting) return;
    const at = waiting.entries.indexOf(entry);
    if (at >= 0) waiting.entries.splice(at, 1);
    if (waiting.owedUntilMs >= entry.atMs) this.publish(destinationId, waiting.owedUntilMs);
  }

  /** A delivered batch of the destination is being gathered: its entries wait for the batch's. */
  hold(destinationId: string): void {
    const waiting = this.of(destinationId);
    waiting.holds++;
    clearTimeout(waiting.timer);
    waiting.timer = undefined;
  }

  /**
   * The batch a hold was for is stored (its entries added) or lost: the entries up to `untilMs`
   * (its newest attempt) go out now; later ones wait for the next batch, or the linger.
   */
  release(destinationId: string, untilMs: number): void {
    const waiting = this.of(destinationId);
    waiting.holds = Math.max(0, waiting.holds - 1);
    this.publish(destinationId, untilMs);
  }

  /** Publishes every entry waiting and waits for every publish under way (at shutdown, and in tests). */
  async flush(): Promise<void> {
    for (const destinationId of [...this.waiting.keys()]) this.publish(destinationId, Infinity);
    await this.publisher.settled();
  }

  private of(destinationId: string): Waiting {
    let waiting = this.waiting.get(destinationId);
    if (!waiting) {
      waiting = { entries: [], holds: 0, owedUntilMs: -Infinity, timer: undefined };
      this.waiting.set(destinationId, waiting);
    }
    return waiting;
  }

  /** Adds an entry in time order (after those of its time): they come nearly in order, so from the end. */
  private push(destinationId: string, entry: IndexEntry): void {
    const waiting = this.of(destinationId);
    const { entries } = waiting;
    let at = entries.length;
    while (at > 0 && entries[at - 1]!.atMs > entry.atMs) at--;
    entries.splice(at, 0, entry);
    if (waiting.holds === 0 && waiting.timer === undefined) {
      waiting.timer = setTimeout(() => this.publish(destinationId, Infinity), this.lingerMs);
    }
  }

  /**
   * Publishes the destination's entries made up to `untilMs`, oldest first, in messages of
   * MAX_MESSAGE_BYTES at most; those from an entry still being stored on wait for it.
   */
  private publish(destinationId: string, untilMs: number): void {
    const waiting = this.waiting.get(destinationId);
    if (!waiting) return;
    clearTimeout(waiting.timer);
    waiting.timer = undefined;
    const sorted = waiting.entries;
    let cut = 0;
    while (cut < sorted.length && sorted[cut]!.atMs <= untilMs && sorted[cut]!.summary) cut++;
    const blocked = cut < sorted.length && sorted[cut]!.atMs <= untilMs;
    waiting.owedUntilMs = blocked ? Math.max(waiting.owedUntilMs, untilMs) : -Infinity;
    const going = sorted.slice(0, cut);
    waiting.entries = sorted.slice(cut);
    if (waiting.entries.length > 0 && waiting.holds === 0 && !blocked) {
      waiting.timer = setTimeout(() => this.publish(destinationId, Infinity), this.lingerMs);
    }
    if (waiting.entries.length === 0 && waiting.holds === 0) this.waiting.delete(destinationId);
    for (let start = 0; start < going.length;) {
      let bytes = 0;
      let end = start;
      for (; end < going.length; end++) {
        const size = entrySize(going[end]!);
        if (end > start && bytes + size > MAX_MESSAGE_BYTES) break;
        bytes += size;
      }
      this.send(destinationId, going.slice(start, end), bytes);
      start = end;
    }
  }

  private send(destinationId: string, entries: IndexEntry[], bytes: number): void {
    const buf = Buffer.allocUnsafe(bytes);
    let pos = 0;
    for (const entry of entries) pos = writeIndexEntry(buf, pos, entry.summary!, entry.attemptId!);
    this.publisher.publish(
      this.names.attemptIndexSubject(destinationId),
      buf,
      entries[0]!.atMs,
      () => undefined,
      (error) => this.lost(entries.length, error, destinationId),
    );
  }
}

const entrySize = (entry: IndexEntry) => indexEntrySize(entry.summary!.length, entry.attemptId!);
