import { createHash } from "node:crypto";
import type { JsonValueType } from "@switchyard/wire";
import { noneApplied, PendingCounts, type Applied, type StreamIndex } from "./pending-counts.js";

/*
 * The records insights keeps in JetStream KV, and the counts waiting to be written to them.
 *
 * Schema bucket (<ns>_schema):
 *   schema.<sourceId>.<type>.<digest>    one entry: calls of a type and name (digest of both)
 *   schema.<sourceId>.<type>.overflow    calls of a type whose names came past the name limit
 *   names.<sourceId>                     the digests of the names admitted to the source's schema
 *   checkpoint.<stream>                  where reading resumes after a restart
 * Usage bucket (<ns>_usage):
 *   <YYYY-MM-DD>.<sourceId>              a source's counts on one UTC day
 */

/** Most keys one schema entry records; keys seen after it are not recorded. */
export const MAX_KEYS_PER_ENTRY = 200;
/** Longest key recorded as it is; a longer one is recorded as its first characters and "…". */
export const MAX_KEY_CHARS = 256;
/** A schema entry's hourly counts cover the last 7 days. */
export const HOURS_KEPT = 7 * 24;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Call types a schema has entries for (delete notifications come from Switchyard, not from sources). */
export const SCHEMA_TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;
export type SchemaType = (typeof SCHEMA_TYPES)[number];

export function isSchemaType(type: string | undefined): type is SchemaType {
  return type !== undefined && (SCHEMA_TYPES as readonly string[]).includes(type);
}

/** Types whose calls have names that count toward the name limit. */
export function isNamedType(type: SchemaType): boolean {
  return type === "track" || type === "page" || type === "screen";
}

/** Counters of a schema entry. */
export const SCHEMA_TOTAL = "total";
export const SCHEMA_FILTERED = "filtered";
/** The counter of calls received in one hour (hours since the Unix epoch). */
export function hourCounter(hour: number): string {
  return `h:${hour}`;
}

/** The last hour's counter, kept: nearly every call falls in the same hour as the one before. */
let lastHour = Number.NaN;
let lastHourCounter = "";

/** hourCounter of the hour `millis` falls in. */
function hourCounterOf(millis: number): string {
  const hour = hourOf(millis);
  if (hour !== lastHour) {
    lastHour = hour;
    lastHourCounter = hourCounter(hour);
  }
  return lastHourCounter;
}

/** Counters of a usage day; a destination's are "d.<destinationId>.<outcome>". */
export const USAGE_OUTCOMES = ["accepted", "filtered", "rejected"] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];
export const DESTINATION_OUTCOMES = ["delivered", "filtered", "failed", "dead_lettered"] as const;
export type DestinationOutcome = (typeof DESTINATION_OUTCOMES)[number];
export function destinationCounter(destinationId: string, outcome: DestinationOutcome): string {
  return `d.${destinationId}.${outcome}`;
}
/** A destination counter's parts, or undefined for a source's own counters. */
export function parseDestinationCounter(counter: string): { destinationId: string; outcome: DestinationOutcome } | undefined {
  if (!counter.startsWith("d.")) return undefined;
  const last = counter.lastIndexOf(".");
  const outcome = counter.slice(last + 1);
  if (last <= 2 || !(DESTINATION_OUTCOMES as readonly string[]).includes(outcome)) return undefined;
  return { destinationId: counter.slice(2, last), outcome: outcome as DestinationOutcome };
}

/** Source and destination ids as the workspace allows them: safe in KV keys. */
const ID = /^[A-Za-z0-9_-]{1,64}$/;
export function isRecordId(id: string): boolean {
  return ID.test(id);
}

/** A type and name's digest: the last token of its entry's key (names are free text; keys are not). */
export function nameDigest(type: SchemaType, name: string): string {
  return createHash("sha256").update(`${type}\n${name}`).digest("base64url").slice(0, 22);
}

export function schemaKey(sourceId: string, type: SchemaType, digestOrOverflow: string): string {
  return `schema.${sourceId}.${type}.${digestOrOverflow}`;
}
export const OVERFLOW = "overflow";
export function namesKey(sourceId: string): string {
  return `names.${sourceId}`;
}
export function checkpointKey(stream: string): string {
  return `checkpoint.${stream}`;
}
export function usageKey(day: string, sourceId: string): string {
  return `${day}.${sourceId}`;
}

/** The UTC day of a time, "YYYY-MM-DD". */
export function utcDay(millis: number): string {
  return new Date(Math.floor(millis / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}
export function hourOf(millis: number): number {
  return Math.floor(millis / HOUR_MS);
}

// ---------------------------------------------------------------- schema entries

/** A schema entry as stored. */
export interface SchemaRecord {
  sourceId: string;
  type: SchemaType;
  name: string;
  overflow: boolean;
  /** received_at of the first and last calls counted, Unix ms. */
  firstSeen: number;
  lastSeen: number;
  /** Keys with their JSON types, in the order first seen (pairs, so no key is ever an object member). */
  keys: [string, JsonValueType[]][];
  counts: Record<string, number>;
  applied: Applied;
  /** When insights last wrote it, Unix ms. */
  updatedAt: number;
}

/** Counts and facts of one schema entry read since its last write. */
export class PendingSchemaEntry {
  readonly counts = new PendingCounts();
  firstSeen = Number.POSITIVE_INFINITY;
  lastSeen = Number.NEGATIVE_INFINITY;
  /** Keys and their types; at most MAX_KEYS_PER_ENTRY. */
  readonly keys = new Map<string, Set<JsonValueType>>();
  /** The keys and types of the last call added (see addKeys). */
  private readonly lastKeys: string[] = [];
  private readonly lastTypes: JsonValueType[] = [];

  constructor(
    readonly key: string,
    readonly sourceId: string,
    readonly type: SchemaType,
    readonly name: string,
    readonly overflow: boolean,
  ) {}

  /** One call of this entry, read from a stream at `sequence`; its keys are added with addKeys. */
  addCall(stream: StreamIndex, sequence: number, receivedAt: number, filtered: boolean): void {
    this.counts.add(stream, sequence, SCHEMA_TOTAL, 1);
    this.counts.add(stream, sequence, hourCounterOf(receivedAt), 1);
    if (filtered) this.counts.add(stream, sequence, SCHEMA_FILTERED, 1);
    if (receivedAt < this.firstSeen) this.firstSeen = receivedAt;
    if (receivedAt > this.lastSeen) this.lastSeen = receivedAt;
  }

  /**
   * A call's keys, keys[start] to keys[end - 1] with their types. Calls of one entry nearly always
   * carry the same keys of the same types in the same order: when they match the last call's,
   * nothing new can be learnt from them, and the per-key lookups are skipped.
   */
  addKeys(keys: readonly string[], types: readonly JsonValueType[], start: number, end: number): void {
    const last = this.lastKeys;
    const lastTypes = this.lastTypes;
    if (last.length === end - start) {
      let same = true;
      for (let at = start; at < end; at++) {
        if (keys[at] !== last[at - start] || types[at] !== lastTypes[at - start]) {
          same = false;
          break;
        }
      }
      if (same) return;
    }
    last.length = 0;
    lastTypes.length = 0;
    for (let at = start; at < end; at++) {
      last.push(keys[at]!);
      lastTypes.push(types[at]!);
      this.addKey(recordedKey(keys[at]!), types[at]!);
    }
  }

  addKey(key: string, type: JsonValueType): void {
    let types = this.keys.get(key);
    if (!types) {
      if (this.keys.size >= MAX_KEYS_PER_ENTRY) return;
      types = new Set();
      this.keys.set(key, types);
    }
    types.add(type);
  }

  /** Takes in another entry's counts and facts (a name that did not make the limit, into its overflow entry). */
  merge(other: PendingSchemaEntry): void {
    this.counts.merge(other.counts);
    if (other.firstSeen < this.firstSeen) this.firstSeen = other.firstSeen;
    if (other.lastSeen > this.lastSeen) this.lastSeen = other.lastSeen;
    for (const [key, types] of other.keys) for (const type of types) this.addKey(key, type);
  }

  /** The stored record with these counts and facts added (see PendingCounts.applyTo). */
  applyTo(current: SchemaRecord | undefined, nowMs: number): { record: SchemaRecord; added: Map<string, number> } {
    const { counts, applied, added } = this.counts.applyTo(current ?? { counts: {}, applied: noneApplied() });
    // Hours older than a week are out of every window.
    const oldestHour = hourOf(nowMs) - HOURS_KEPT;
    for (const counter of Object.keys(counts)) {
      if (counter.startsWith("h:") && Number(counter.slice(2)) <= oldestHour) delete counts[counter];
    }
    const keys: [string, JsonValueType[]][] = current ? current.keys.map(([key, types]) => [key, [...types]]) : [];
    const index = new Map(keys.map(([key], at) => [key, at]));
    for (const [key, types] of this.keys) {
      let at = index.get(key);
      if (at === undefined) {
        if (keys.length >= MAX_KEYS_PER_ENTRY) continue;
        at = keys.push([key, []]) - 1;
        index.set(key, at);
      }
      const known = keys[at]![1];
      for (const type of types) if (!known.includes(type)) known.push(type);
    }
    const record: SchemaRecord = {
      sourceId: this.sourceId,
      type: this.type,
      name: this.name,
      overflow: this.overflow,
      firstSeen: Math.min(current?.firstSeen ?? Number.POSITIVE_INFINITY, this.firstSeen),
      lastSeen: Math.max(current?.lastSeen ?? Number.NEGATIVE_INFINITY, this.lastSeen),
      keys,
      counts,
      applied,
      updatedAt: nowMs,
    };
    return { record, added };
  }
}

/** A key as a schema records it: as it is, or its first MAX_KEY_CHARS characters and "…". */
export function recordedKey(key: string): string {
  return key.length <= MAX_KEY_CHARS ? key : `${key.slice(0, MAX_KEY_CHARS)}…`;
}

/** Calls of an entry in the last `hours` hours (the current hour included) at `nowMs`. */
export function recentCount(record: SchemaRecord, hours: number, nowMs: number): number {
  const first = hourOf(nowMs) - hours + 1;
  let total = 0;
  for (const [counter, count] of Object.entries(record.counts)) {
    if (counter.startsWith("h:") && Number(counter.slice(2)) >= first) total += count;
  }
  return total;
}

// ---------------------------------------------------------------- usage days

/** A source's usage on one UTC day, as stored. */
export interface UsageRecord {
  sourceId: string;
  day: string;
  counts: Record<string, number>;
  applied: Applied;
  updatedAt: number;
}

/** Counts of one source and day read since the record's last write. */
export class PendingUsageDay {
  readonly counts = new PendingCounts();

  constructor(
    readonly key: string,
    readonly sourceId: string,
    readonly day: string,
  ) {}

  applyTo(current: UsageRecord | undefined, nowMs: number): { record: UsageRecord; added: Map<string, number> } {
    const { counts, applied, added } = this.counts.applyTo(current ?? { counts: {}, applied: noneApplied() });
    return { record: { sourceId: this.sourceId, day: this.day, counts, applied, updatedAt: nowMs }, added };
  }
}

// ---------------------------------------------------------------- name index and checkpoints

/** The names admitted to a source's schema, as digests, in the order they were admitted. */
export interface NamesRecord {
  digests: string[];
}

/** Where reading a stream resumes: every message up to `sequence` is in the records. */
export interface CheckpointRecord {
  sequence: number;
}
