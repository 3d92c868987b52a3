/**
 * The streams insights reads, in a fixed order: each record remembers, per stream, the highest
 * sequence whose counts it holds.
 */
export const STREAMS = ["calls", "filtered", "usage"] as const;
export type StreamName = (typeof STREAMS)[number];
/** A stream by its position in STREAMS (kept as a number in the pending counts). */
export type StreamIndex = 0 | 1 | 2;

/** Per stream, the highest sequence a record has taken counts from (0: none). */
export type Applied = Record<StreamName, number>;

export function noneApplied(): Applied {
  return { calls: 0, filtered: 0, usage: 0 };
}

/** The counting part of a stored record: named counters, and what they hold. */
export interface CountedState {
  counts: Record<string, number>;
  applied: Applied;
}

/**
 * Counts read from the bus and not yet written to their record: one entry per message and
 * counter ("total", "h:<hour>", "accepted", ...), so a write can leave out exactly the messages
 * the record already holds (see applyTo). That is what keeps totals exact when a message is read
 * twice: after a crash (reading resumes at a checkpoint older than some records), or by two
 * replicas reading the same streams. Entries of one message for one counter are added up.
 */
export class PendingCounts {
  private readonly streams: StreamIndex[] = [];
  private readonly sequences: number[] = [];
  private readonly counters: string[] = [];
  private readonly amounts: number[] = [];
  /** The message being added (stream and sequence) and where each of its counters' entries is. */
  private currentStream = -1;
  private currentSequence = -1;
  private readonly currentEntries = new Map<string, number>();

  /** Entries held (for the memory bound). */
  get size(): number {
    return this.sequences.length;
  }

  add(stream: StreamIndex, sequence: number, counter: string, amount: number): void {
    if (stream !== this.currentStream || sequence !== this.currentSequence) {
      this.currentStream = stream;
      this.currentSequence = sequence;
      this.currentEntries.clear();
    }
    const at = this.currentEntries.get(counter);
    if (at !== undefined) {
      this.amounts[at]! += amount;
      return;
    }
    this.currentEntries.set(counter, this.sequences.length);
    this.streams.push(stream);
    this.sequences.push(sequence);
    this.counters.push(counter);
    this.amounts.push(amount);
  }

  /** Takes in another's entries (counts moved to another record, or kept after a failed write). */
  merge(other: PendingCounts): void {
    for (let index = 0; index < other.sequences.length; index++) {
      this.streams.push(other.streams[index]!);
      this.sequences.push(other.sequences[index]!);
      this.counters.push(other.counters[index]!);
      this.amounts.push(other.amounts[index]!);
    }
    // The next add starts a fresh entry rather than adding to one of the merged ones.
    this.currentStream = -1;
  }

  /** The lowest sequence of a stream held here; Infinity when none. */
  lowestSequence(stream: StreamIndex): number {
    let lowest = Number.POSITIVE_INFINITY;
    for (let index = 0; index < this.sequences.length; index++) {
      if (this.streams[index] === stream && this.sequences[index]! < lowest) lowest = this.sequences[index]!;
    }
    return lowest;
  }

  /**
   * The record's counts and applied sequences with these added: an entry whose sequence the
   * record already holds for its stream is left out. `added` is what was added, by counter.
   * Sound because a record's applied sequence S for a stream means every message up to S that
   * counts toward it was added: counts come from readers that read every message in order from a
   * checkpoint at or before S (each record written before its checkpoint was).
   */
  applyTo(state: CountedState): { counts: Record<string, number>; applied: Applied; added: Map<string, number> } {
    const counts = { ...state.counts };
    const before = [state.applied.calls, state.applied.filtered, state.applied.usage];
    const highest = [...before];
    const added = new Map<string, number>();
    for (let index = 0; index < this.sequences.length; index++) {
      const stream = this.streams[index]!;
      const sequence = this.sequences[index]!;
      if (sequence <= before[stream]!) continue;
      if (sequence > highest[stream]!) highest[stream] = sequence;
      const counter = this.counters[index]!;
      const amount = this.amounts[index]!;
      counts[counter] = (counts[counter] ?? 0) + amount;
      added.set(counter, (added.get(counter) ?? 0) + amount);
    }
    return { counts, applied: { calls: highest[0]!, filtered: highest[1]!, usage: highest[2]! }, added };
  }
}
