import { JetStreamApiError, JetStreamError, type JetStreamClient, type JetStreamPublishOptions, type PubAck } from "@nats-io/jetstream";
import { jserrors } from "@nats-io/jetstream/internal";
import { createInbox, errors, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Payload } from "@nats-io/nats-core";

/** The publish options AckedPublisher handles itself; any other goes to the JetStream client's own publish. */
const HANDLED_OPTIONS = new Set(["headers", "msgID", "timeout", "expect"]);

/** A publish waiting for its acknowledgement. */
interface Waiting {
  resolve: (ack: PubAck) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * JetStream publishes whose acknowledgements all come back on one reply subscription.
 *
 * nats.js makes each `js.publish` a request of its own, and after every acknowledged one builds an
 * Error with a stack (its request object rejects its already settled promise with a new
 * "cancelled" error) and a TextDecoder to read the acknowledgement: most of the client's CPU per
 * publish goes there (`npm run bench:publish` compares the two). Every service publishes (ingest a
 * message per batch, delivery
 * several per message it handles), so the JetStream client each service gets publishes this way
 * (`withAckedPublish`); the acknowledgement, its errors and its timeout are those of nats.js.
 */
class AckedPublisher {
  private readonly waiting = new Map<string, Waiting>();
  private readonly inbox: string;
  private nextToken = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly defaultTimeoutMs: number,
  ) {
    this.inbox = createInbox();
    this.nc.subscribe(`${this.inbox}.*`, { callback: (_error, message) => this.answer(message) });
    // A closed connection answers nothing more: fail what still waits instead of leaving it to its timer.
    void this.nc.closed().then(() => this.failAll(new errors.ClosedConnectionError()));
  }

  /** Publishes and resolves with JetStream's acknowledgement; rejects as `js.publish` would. */
  publish(subject: string, payload: Payload | undefined, options: Partial<JetStreamPublishOptions> = {}): Promise<PubAck> {
    const token = (this.nextToken++).toString(36);
    return new Promise<PubAck>((resolve, reject) => {
      const timeoutMs = options.timeout || this.defaultTimeoutMs;
      const timer = setTimeout(() => {
        this.waiting.delete(token);
        reject(new errors.TimeoutError());
      }, timeoutMs);
      this.waiting.set(token, { resolve, reject, timer });
      try {
        this.nc.publish(subject, payload, { reply: `${this.inbox}.${token}`, headers: publishHeaders(options) });
      } catch (error) {
        clearTimeout(timer);
        this.waiting.delete(token);
        reject(error as Error);
      }
    });
  }

  private answer(message: Msg): void {
    const token = message.subject.slice(this.inbox.length + 1);
    const waiting = this.waiting.get(token);
    if (!waiting) return; // timed out already
    this.waiting.delete(token);
    clearTimeout(waiting.timer);
    try {
      waiting.resolve(readAck(message));
    } catch (error) {
      waiting.reject(error as Error);
    }
  }

  private failAll(error: Error): void {
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
    this.waiting.clear();
  }
}

/** The headers nats.js's publish would send for these options. */
function publishHeaders(options: Partial<JetStreamPublishOptions>): MsgHdrs | undefined {
  const { msgID, expect } = options;
  if (!msgID && !expect) return options.headers;
  const headers = options.headers ?? natsHeaders();
  if (msgID) headers.set("Nats-Msg-Id", msgID);
  if (expect?.lastMsgID) headers.set("Nats-Expected-Last-Msg-Id", expect.lastMsgID);
  if (expect?.streamName) headers.set("Nats-Expected-Stream", expect.streamName);
  if (typeof expect?.lastSequence === "number") headers.set("Nats-Expected-Last-Sequence", String(expect.lastSequence));
  if (typeof expect?.lastSubjectSequence === "number") {
    headers.set("Nats-Expected-Last-Subject-Sequence", String(expect.lastSubjectSequence));
  }
  if (expect?.lastSubjectSequenceSubject) headers.set("Nats-Expected-Last-Subject-Sequence-Subject", expect.lastSubjectSequenceSubject);
  return headers;
}

/** The acknowledgement in a reply, or the error nats.js throws for it. */
function readAck(message: Msg): PubAck {
  if (message.data.length === 0 && message.headers?.code === 503) {
    // No stream takes the subject (or JetStream is off): nats.js reports both as JetStream not enabled.
    throw new jserrors.JetStreamNotEnabled("jetstream is not enabled");
  }
  const reply = JSON.parse(Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength).toString("utf8")) as
    (PubAck & { error?: undefined }) | { error: ConstructorParameters<typeof JetStreamApiError>[0]; stream?: undefined };
  if (reply.error) throw new JetStreamApiError(reply.error);
  if (!reply.stream) throw new JetStreamError("invalid ack response");
  reply.duplicate = reply.duplicate ?? false;
  return reply;
}

/**
 * `js` with its `publish` going through an AckedPublisher when the options are ones it handles
 * (headers, msgID, timeout, expect); everything else, including the KV and consumer APIs built
 * on `js`, is the client itself (and their publishes take the same path).
 */
export function withAckedPublish(js: JetStreamClient, nc: NatsConnection): JetStreamClient {
  const publisher = new AckedPublisher(nc, js.getOptions().timeout ?? 5_000);
  const original = js.publish.bind(js);
  const client = Object.create(js) as JetStreamClient;
  client.publish = (subject, payload, options) => {
    if (options) for (const key in options) if (!HANDLED_OPTIONS.has(key)) return original(subject, payload, options);
    return publisher.publish(subject, payload, options);
  };
  return client;
}
