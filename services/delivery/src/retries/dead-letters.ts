import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DeadLetter } from "@switchyard/contracts";
import { BUS_MESSAGE_TYPE_NAMES, busMessageHeaders, headerSafeId, type BusNames } from "@switchyard/bus";
import { readStream } from "../pipeline/stream-reader.js";

export interface DeadLetterEntry {
  sequence: number;
  deadLetter: DeadLetter;
}

/** Deliveries that could not finish, kept (per destination subject) until replayed or expired. */
export class DeadLetters {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: BusNames,
  ) {}

  async add(deadLetter: DeadLetter): Promise<void> {
    const task = deadLetter.task;
    const windowStart = task?.windowStart?.getTime() ?? 0;
    await this.js.publish(this.names.deadSubject(task?.destinationId ?? "unknown"), DeadLetter.encode(deadLetter).finish(), {
      msgID: `${headerSafeId(task?.call?.messageId ?? "")}:${task?.destinationId ?? ""}:dead:${windowStart}`,
      headers: busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deadLetter),
    });
  }

  async list(options: { destinationId?: string; afterSequence?: number; limit: number }): Promise<DeadLetterEntry[]> {
    const entries = await readStream(this.js, this.names.deadStream, {
      ...(options.destinationId ? { subject: this.names.deadSubject(options.destinationId) } : {}),
      ...(options.afterSequence ? { afterSequence: options.afterSequence } : {}),
      limit: options.limit,
    });
    return entries.map((entry) => ({ sequence: entry.sequence, deadLetter: DeadLetter.decode(entry.data) }));
  }

  async get(sequence: number): Promise<DeadLetter | undefined> {
    const stored = await this.jsm.streams.getMessage(this.names.deadStream, { seq: sequence }).catch(() => null);
    return stored ? DeadLetter.decode(stored.data) : undefined;
  }

  async remove(sequence: number): Promise<void> {
    await this.jsm.streams.deleteMessage(this.names.deadStream, sequence, false);
  }
}
