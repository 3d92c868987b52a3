import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { NATS_MSG_ID_HEADER, POISON_HEADERS } from "@switchyard/bus";
import type { BusNames } from "@switchyard/bus";
import type { Logger } from "@switchyard/platform";

/** Why a message was set aside: it could not be decoded, or handling it failed on every delivery. */
export type PoisonReason = "undecodable" | "handler_failed";

/** Longest error text kept in a header. */
const MAX_ERROR_CHARS = 500;

/**
 * The poison stream: messages of the calls or retry stream that delivery
 * cannot handle, moved aside so they neither block their stream nor come back
 * without end. Each is stored byte for byte with its headers, plus where it
 * came from and why, so an operator can read it (`switchyard tail poison`)
 * and republish it to its subject once the cause is fixed.
 */
export class PoisonMessages {
  constructor(
    private readonly js: JetStreamClient,
    private readonly names: BusNames,
    private readonly onStored: (from: "calls" | "retry", reason: PoisonReason) => void,
    private readonly logger: Logger,
  ) {}

  /** Stores the message and acks it. Throws (leaving the message unacked) when the store fails. */
  async setAside(message: JsMsg, from: "calls" | "retry", reason: PoisonReason, error: unknown): Promise<void> {
    const headers = natsHeaders();
    for (const [key, values] of message.headers ?? []) {
      // Nats-Msg-Id names the original; the poison copy gets its own below.
      if (key.toLowerCase() !== NATS_MSG_ID_HEADER.toLowerCase()) for (const value of values) headers.append(key, value);
    }
    const errorText = (error instanceof Error ? error.message : String(error)).replace(/[\r\n]+/g, " ").slice(0, MAX_ERROR_CHARS);
    headers.set(POISON_HEADERS.reason, reason);
    headers.set(POISON_HEADERS.error, errorText);
    headers.set(POISON_HEADERS.stream, message.info.stream);
    headers.set(POISON_HEADERS.subject, message.subject);
    headers.set(POISON_HEADERS.sequence, String(message.seq));
    headers.set(POISON_HEADERS.deliveries, String(message.info.deliveryCount));
    await this.js.publish(this.names.poisonSubject(from), message.data, {
      // Handled again after a crash before the ack, the same message is stored once.
      msgID: `poison:${message.info.stream}:${message.seq}`,
      headers,
    });
    message.ack();
    this.onStored(from, reason);
    this.logger.error(
      {
        stream: message.info.stream,
        seq: message.seq,
        subject: message.subject,
        deliveries: message.info.deliveryCount,
        reason,
        error: errorText,
      },
      "moved a message delivery cannot handle to the poison stream",
    );
  }
}
