import { DiscardPolicy, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { BusNames } from "./bus-names.js";

export interface CallsStreamOptions {
  /** How long JetStream remembers batch ids to drop re-sent batches. */
  duplicateWindowMs: number;
  /** How long calls stay in the stream (delivery and taps read from it). */
  maxAgeMs: number;
  replicas: number;
}

export const DEFAULT_CALLS_STREAM_OPTIONS: CallsStreamOptions = {
  duplicateWindowMs: 10 * 60_000,
  maxAgeMs: 7 * 24 * 3600_000,
  replicas: 1,
};

/**
 * The largest message the calls stream takes, headers included. A batch is at
 * most 500 KB of JSON; ingest splits the rare one whose protobuf is larger.
 */
export const CALLS_MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * Creates the calls stream, or brings an existing one to the wanted settings.
 * Every service calls this at start-up, so the start order does not matter.
 */
export async function ensureCallsStream(jsm: JetStreamManager, names: BusNames, options: CallsStreamOptions): Promise<void> {
  const config: StreamSettings = {
    name: names.callsStream,
    subjects: [names.callsSubjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(options.duplicateWindowMs),
    max_age: nanos(options.maxAgeMs),
    num_replicas: options.replicas,
    max_msg_size: CALLS_MAX_MESSAGE_BYTES,
  };
  await upsertStream(jsm, config);
}

export type StreamSettings = Partial<StreamConfig> & { name: string };

export async function upsertStream(jsm: JetStreamManager, config: StreamSettings): Promise<void> {
  const name = config.name;
  try {
    await jsm.streams.info(name);
  } catch (error) {
    if (isStreamNotFound(error)) {
      try {
        await jsm.streams.add(config);
        return;
      } catch (addError) {
        // Another replica created it between our info and add.
        if (!isStreamNameInUse(addError)) throw addError;
      }
    } else {
      throw error;
    }
  }
  await jsm.streams.update(name, config);
}

function isStreamNotFound(error: unknown): boolean {
  return error instanceof Error && /stream not found/i.test(error.message);
}

function isStreamNameInUse(error: unknown): boolean {
  return error instanceof Error && /already in use/i.test(error.message);
}
