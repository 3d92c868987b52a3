import { userHash } from "./sort-key.js";
import { compareRecords, sameValue, stateRecords, userIdOf, valueOf, type RecordCursor } from "./trait-state.js";

/** A user whose value changes: `value` is the new JSON value. */
export interface Change {
  userId: string;
  value: string;
}

/** Runs of unchanged records are compared in spans from this many bytes, doubling up to MAX_SPAN while they match. */
const MIN_SPAN = 64;
const MAX_SPAN = 64 * 1024;

/**
 * Walks the old and the new state blob side by side, in one pass. Users only
 * in the new state change to their value, users only in the old state change
 * to `absentValue` ("false" for audiences, "null" for traits), users in both
 * change only when the value differs. Records are compared as bytes, and runs
 * of identical records (most of a re-sync) a span at a time; ids and values
 * are decoded only for the changes.
 */
export function* diffStates(oldBlob: Buffer | undefined, newBlob: Buffer, absentValue: string): Generator<Change> {
  const olds = stateRecords(oldBlob);
  const news = stateRecords(newBlob);
  let span = MIN_SPAN;
  while (!olds.done || !news.done) {
    if (!olds.done && !news.done) {
      if (olds.skipSame(news, span)) {
        span = Math.min(2 * span, MAX_SPAN);
        continue;
      }
      span = MIN_SPAN;
    }
    const order = olds.done ? 1 : news.done ? -1 : compareRecords(olds, news);
    if (order < 0) {
      yield { userId: userIdOf(olds), value: absentValue };
      olds.next();
    } else if (order > 0) {
      yield { userId: userIdOf(news), value: valueOf(news) };
      news.next();
    } else {
      if (!sameValue(olds, news)) yield { userId: userIdOf(news), value: valueOf(news) };
      olds.next();
      news.next();
    }
  }
}

/**
 * The state after an increment: the old records with `removed` users taken
 * out and `set` records (in state order) put in or replacing theirs.
 */
export function applyIncrement(olds: RecordCursor, sets: RecordCursor, removed: ReadonlySet<string>): RecordCursor {
  return new IncrementRecords(olds, sets, removed);
}

class IncrementRecords implements RecordCursor {
  done = false;
  /** The cursor the current record comes from. */
  private from: RecordCursor;
  /** An old record's id is decoded only when its hash is one of the removed users'. */
  private readonly removedHashes: ReadonlySet<number>;

  constructor(
    private readonly olds: RecordCursor,
    private readonly sets: RecordCursor,
    private readonly removed: ReadonlySet<string>,
  ) {
    this.from = sets;
    this.removedHashes = new Set(Array.from(removed, userHash));
    this.settle();
  }

  get hash(): number {
    return this.from.hash;
  }
  get buffer(): Buffer {
    return this.from.buffer;
  }
  get idStart(): number {
    return this.from.idStart;
  }
  get idLength(): number {
    return this.from.idLength;
  }
  get valueStart(): number {
    return this.from.valueStart;
  }
  get valueLength(): number {
    return this.from.valueLength;
  }

  next(): void {
    this.from.next();
    this.settle();
  }

  /** Moves to the next record to yield: the lesser of old and set, skipping removed old ones. */
  private settle(): void {
    const { olds, sets } = this;
    for (;;) {
      if (olds.done && sets.done) {
        this.done = true;
        return;
      }
      const order = olds.done ? 1 : sets.done ? -1 : compareRecords(olds, sets);
      if (order < 0 && this.removedHashes.has(olds.hash) && this.removed.has(userIdOf(olds))) {
        olds.next();
        continue;
      }
      if (order === 0) olds.next(); // replaced by the set's record
      this.from = order < 0 ? olds : sets;
      return;
    }
  }
}
