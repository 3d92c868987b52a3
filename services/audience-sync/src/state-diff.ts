import { compareKeys } from "./sort-key.js";
import type { StateEntry } from "./trait-state.js";

/** A user whose value changes: `value` is the new JSON value. */
export interface Change {
  userId: string;
  value: string;
}

/**
 * Walks the old and the new state (both in state order) side by side, in one
 * pass. Users only in the new state change to their value, users only in the
 * old state change to `absentValue` ("false" for audiences, "null" for
 * traits), users in both change only when the value differs.
 */
export function* diffStates(oldEntries: Iterable<StateEntry>, newEntries: Iterable<StateEntry>, absentValue: string): Generator<Change> {
  const olds = oldEntries[Symbol.iterator]();
  const news = newEntries[Symbol.iterator]();
  let old = olds.next();
  let next = news.next();
  while (!old.done || !next.done) {
    if (next.done) {
      yield { userId: old.value!.userId, value: absentValue };
      old = olds.next();
      continue;
    }
    if (old.done) {
      yield { userId: next.value.userId, value: next.value.value };
      next = news.next();
      continue;
    }
    const order = compareKeys(old.value.hash, old.value.userId, next.value.hash, next.value.userId);
    if (order < 0) {
      yield { userId: old.value.userId, value: absentValue };
      old = olds.next();
    } else if (order > 0) {
      yield { userId: next.value.userId, value: next.value.value };
      next = news.next();
    } else {
      if (old.value.value !== next.value.value) yield { userId: next.value.userId, value: next.value.value };
      old = olds.next();
      next = news.next();
    }
  }
}

/**
 * The state after an increment: the old entries with `removed` users taken
 * out and `set` entries (in state order) put in or replacing theirs.
 */
export function* applyIncrement(
  oldEntries: Iterable<StateEntry>,
  set: Iterable<StateEntry>,
  removed: ReadonlySet<string>,
): Generator<StateEntry> {
  const olds = oldEntries[Symbol.iterator]();
  const sets = set[Symbol.iterator]();
  let old = olds.next();
  let next = sets.next();
  while (!old.done || !next.done) {
    const order = old.done ? 1 : next.done ? -1 : compareKeys(old.value.hash, old.value.userId, next.value.hash, next.value.userId);
    if (order < 0) {
      if (!removed.has(old.value!.userId)) yield old.value!;
      old = olds.next();
    } else {
      yield next.value!;
      if (order === 0) old = olds.next();
      next = sets.next();
    }
  }
}

/** Passes entries through while writing each one to `sink`. */
export function* tee<T>(entries: Iterable<T>, sink: { add(entry: T): void }): Generator<T> {
  for (const entry of entries) {
    sink.add(entry);
    yield entry;
  }
}
