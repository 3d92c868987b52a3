import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "pino";
import { writeKeyHashesEqual, hashWriteKey } from "./write-keys.js";
import type { CallFilter } from "./call-filter.js";
import { parseKvKey } from "./kv-keys.js";
import {
  connectionSchema,
  sourceRecordSchema,
  storedDestinationSchema,
  type Connection,
  type Destination,
  type SourceRecord,
} from "./schema.js";

/** A destination a source's calls go to, and the filter they must match there (undefined: none). */
export interface CallRoute {
  readonly destination: Destination;
  readonly filter: CallFilter | undefined;
}

/**
 * A live, in-memory copy of the workspace configuration, kept current by a
 * KV watch, so every service sees a change within moments and without a
 * restart. Lookups are synchronous and never touch the network.
 */
export class WorkspaceView {
  private readonly sources = new Map<string, SourceRecord>();
  private readonly sourceByKeyHash = new Map<string, string>();
  private readonly destinations = new Map<string, Destination>();
  private readonly connections = new Map<string, Connection>();
  private stopWatch: (() => void) | undefined;

  private constructor(private readonly logger: Logger) {}

  /** Loads the current configuration, then follows changes until close(). */
  static async open(kv: KV, logger: Logger): Promise<WorkspaceView> {
    const view = new WorkspaceView(logger);
    await view.follow(kv);
    return view;
  }

  /**
   * The source a write key belongs to, or undefined: one of its current keys,
   * or a key a rotation replaced whose grace period has not ended at `nowMs`.
   * Only the key's SHA-256 digest is looked up and compared (in constant
   * time), so neither the lookup's timing nor memory reveals anything of a key.
   */
  sourceForWriteKey(writeKey: string, nowMs = Date.now()): SourceRecord | undefined {
    const hash = hashWriteKey(writeKey);
    const sourceId = this.sourceByKeyHash.get(hash);
    const source = sourceId === undefined ? undefined : this.sources.get(sourceId);
    if (!source) return undefined;
    if (source.writeKeyHashes.some((stored) => writeKeyHashesEqual(stored, hash))) return source;
    const retiring = source.retiringWriteKeys?.find((key) => writeKeyHashesEqual(key.hash, hash));
    return retiring && Date.parse(retiring.expiresAt) > nowMs ? source : undefined;
  }

  /** Every source's id. */
  sourceIds(): string[] {
    return [...this.sources.keys()];
  }

  /** A source by id, or undefined. */
  source(id: string): SourceRecord | undefined {
    return this.sources.get(id);
  }

  /** Every destination's id. */
  destinationIds(): string[] {
    return [...this.destinations.keys()];
  }

  /** A destination by id, or undefined. */
  destination(id: string): Destination | undefined {
    return this.destinations.get(id);
  }

  /** The destinations connected to a source, enabled or not. */
  destinationsOf(sourceId: string): Destination[] {
    const result: Destination[] = [];
    for (const connection of this.connections.values()) {
      if (connection.sourceId !== sourceId) continue;
      const destination = this.destinations.get(connection.destinationId);
      if (destination) result.push(destination);
    }
    return result;
  }

  /** The Webhooks destinations a source's calls are delivered to (connected, enabled): those that get its deletion notices. */
  webhookDestinationsOf(sourceId: string): Destination[] {
    return this.routesOf(sourceId)
      .map((route) => route.destination)
      .filter((destination) => destination.type === "webhooks");
  }

  /**
   * The routes of a source's calls: each connected, enabled destination, of any kind, with the
   * connection's filter (undefined: every call). A filter is the same object until its
   * connection changes, so what is made of it can be kept per object.
   */
  routesOf(sourceId: string): CallRoute[] {
    const result: CallRoute[] = [];
    for (const connection of this.connections.values()) {
      if (connection.sourceId !== sourceId) continue;
      const destination = this.destinations.get(connection.destinationId);
      if (destination && destination.enabled) result.push({ destination, filter: connection.filter });
    }
    return result;
  }

  /** Stops following the bucket. */
  close(): void {
    this.stopWatch?.();
  }

  private async follow(kv: KV): Promise<void> {
    const status = await kv.status();
    const watcher = await kv.watch({ key: ">" });
    this.stopWatch = () => watcher.stop();
    let markReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    if (status.values === 0) markReady();

    void (async () => {
      for await (const entry of watcher) {
        this.apply(entry);
        if (!entry.isUpdate && (entry.delta ?? 0) === 0) markReady();
        if (entry.isUpdate) markReady();
      }
    })();
    await ready;
  }

  private apply(entry: KvWatchEntry): void {
    const key = parseKvKey(entry.key);
    if (!key) return;
    const deleted = entry.operation !== "PUT";
    try {
      switch (key.kind) {
        case "source":
          this.removeSource(key.id);
          if (!deleted) this.addSource(sourceRecordSchema.parse(entry.json()));
          break;
        case "destination":
          if (deleted) this.destinations.delete(key.id);
          else this.destinations.set(key.id, storedDestinationSchema.parse(entry.json()));
          break;
        case "connection": {
          const id = `${key.sourceId}.${key.destinationId}`;
          if (deleted) this.connections.delete(id);
          else this.connections.set(id, connectionSchema.parse(entry.json()));
          break;
        }
      }
    } catch (error) {
      this.logger.error({ err: error, key: entry.key }, "ignoring an invalid workspace record");
    }
  }

  private addSource(source: SourceRecord): void {
    this.sources.set(source.id, source);
    for (const hash of keyHashesOf(source)) this.sourceByKeyHash.set(hash, source.id);
  }

  private removeSource(id: string): void {
    const previous = this.sources.get(id);
    if (!previous) return;
    for (const hash of keyHashesOf(previous)) this.sourceByKeyHash.delete(hash);
    this.sources.delete(id);
  }
}

/** Every key hash that may authenticate as the source: current and retiring. */
function keyHashesOf(source: SourceRecord): string[] {
  return [...source.writeKeyHashes, ...(source.retiringWriteKeys ?? []).map((key) => key.hash)];
}
