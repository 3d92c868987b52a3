import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { BUS_MESSAGE_TYPE_HEADER, NATS_MSG_ID_HEADER } from "@switchyard/bus";
import { CallBatch } from "@switchyard/contracts";
import type { BusNames } from "@switchyard/bus";

/** A namespace no other test uses, so tests can share a NATS server (NATS_URL). */
export function uniqueNamespace(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

export interface StoredBatch {
  sequence: number;
  subject: string;
  msgId: string | undefined;
  type: string | undefined;
  batch: CallBatch;
}

/** Every batch in the calls stream (or `stream`, e.g. the filtered stream), decoded, in stream order. */
export async function readCallBatches(nc: NatsConnection, names: BusNames, stream = names.callsStream): Promise<StoredBatch[]> {
  return (await readStream(nc, stream)).map(({ data, ...message }) => ({ ...message, batch: CallBatch.decode(data) }));
}

/** A message stored in a stream, its payload as stored. */
export interface StoredMessage {
  sequence: number;
  subject: string;
  msgId: string | undefined;
  type: string | undefined;
  data: Uint8Array;
}

/** Every message in a stream, in stream order. */
export async function readStream(nc: NatsConnection, stream: string): Promise<StoredMessage[]> {
  const js = jetstream(nc);
  const consumer = await js.consumers.get(stream);
  const info = await consumer.info(true);
  const total = info.num_pending;
  const stored: StoredMessage[] = [];
  if (total === 0) return stored;
  const messages = await consumer.fetch({ max_messages: total, expires: 5_000 });
  for await (const message of messages) {
    stored.push({
      sequence: message.seq,
      subject: message.subject,
      msgId: message.headers?.get(NATS_MSG_ID_HEADER),
      type: message.headers?.get(BUS_MESSAGE_TYPE_HEADER),
      data: message.data,
    });
    if (stored.length === total) break;
  }
  return stored;
}
