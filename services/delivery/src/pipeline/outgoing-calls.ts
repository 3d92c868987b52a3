import { Call, type CallBatch } from "@switchyard/contracts";
import {
  type CallFieldFinder,
  JsonBytes,
  readCallBatch,
  UNUSUAL,
  walkCallBatch,
  webhookBodyBytes,
  WireReader,
  writeWebhookBody,
  type WrittenCall,
} from "@switchyard/wire";

/**
 * A call ready to go out: its webhook body, made once for all of its
 * destinations, and what delivery must know of it. The whole decoded call is
 * only needed when a delivery fails (the retry path stores it).
 */
export interface OutgoingCall {
  readonly messageId: string;
  /** When ingest accepted the call. */
  readonly receivedAt: Date | undefined;
  readonly integrations: Record<string, unknown> | undefined;
  /** The JSON body (docs/contract.md §6.3): exactly the bytes sent and signed. Undefined for a call without a type, which cannot be delivered. */
  readonly body: Buffer | undefined;
  call(): Call;
  /** The call's switchyard.v1.Call bytes: as stored when it was read from a batch, else encoded once. */
  encoded(): Uint8Array;
  /** Points the finder at the call's bytes, for a destination filter to look fields up in. */
  readFields(finder: CallFieldFinder): void;
}

export interface OutgoingBatch {
  sourceId: string;
  receivedAt: Date | undefined;
  calls: OutgoingCall[];
}

/**
 * The calls of a switchyard.v1.CallBatch, their bodies written straight from
 * the bytes (libs/core/wire webhook-body-writer.ts) and each call decoded only if it
 * is asked for. A batch with anything unusual in it is decoded instead, so
 * the result is always what decoding would give; bytes that are not a
 * CallBatch throw as readCallBatch throws.
 */
export function readOutgoingBatch(bytes: Uint8Array): OutgoingBatch {
  try {
    return fromWire(bytes);
  } catch (error) {
    if (error !== UNUSUAL) throw error;
  }
  return fromDecoded(readCallBatch(bytes));
}

/**
 * The calls of a switchyard.v1.CallBatch, decoded (readCallBatch), for destinations whose kind
 * works on the decoded call rather than on the webhook body: nothing is written that none of them
 * sends. Bytes that are not a CallBatch throw as readCallBatch throws.
 */
export function readDecodedBatch(bytes: Uint8Array): OutgoingBatch {
  return fromDecoded(readCallBatch(bytes));
}

/** The source_id of a CallBatch's bytes; "" when they are not in the plain encoding (the readers then decide). */
export function batchSourceId(bytes: Uint8Array): string {
  let sourceId = "";
  try {
    walkCallBatch(new WireReader(bytes), bytes.length, {
      sourceId: (reader, start, end) => (sourceId = reader.text(start, end)),
      receivedAt: () => undefined,
      call: () => undefined,
    });
  } catch (error) {
    if (error !== UNUSUAL) throw error;
    return "";
  }
  return sourceId;
}

/**
 * A decoded call (a retry's, or one of an unusual batch). Its body is
 * serialised when first asked for, inside the round that sends it: a call
 * whose body cannot be made (a time no Date can format) then fails that
 * round, not the batch or the retry message it came in.
 */
export function outgoingCall(call: Call): OutgoingCall {
  return new DecodedCall(call);
}

class DecodedCall implements OutgoingCall {
  private serialised: Buffer | undefined;
  private bytes: Uint8Array | undefined;

  constructor(private readonly decoded: Call) {}

  get messageId(): string {
    return this.decoded.messageId;
  }

  get receivedAt(): Date | undefined {
    return this.decoded.receivedAt;
  }

  get integrations(): Record<string, unknown> | undefined {
    return this.decoded.integrations;
  }

  get body(): Buffer | undefined {
    if (!this.decoded.payload) return undefined;
    return (this.serialised ??= webhookBodyBytes(this.decoded));
  }

  call(): Call {
    return this.decoded;
  }

  encoded(): Uint8Array {
    return (this.bytes ??= Call.encode(this.decoded).finish());
  }

  readFields(finder: CallFieldFinder): void {
    finder.read(this.encoded());
  }
}

/**
 * Why a call's webhook body cannot be made (no type, or a time no Date can
 * format: ingest stores neither), or undefined when it can. Such a call has
 * nothing to send, now or on any retry: it is dead-lettered as "undeliverable".
 */
export function undeliverableReason(call: OutgoingCall): string | undefined {
  try {
    return call.body ? undefined : "the call has no type";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function fromDecoded(batch: CallBatch): OutgoingBatch {
  return { sourceId: batch.sourceId, receivedAt: batch.receivedAt, calls: batch.calls.map(outgoingCall) };
}

/**
 * Where bodies are written, batch after batch (reading a batch is synchronous,
 * so batches never interleave). Slabs of 1 MiB hold about fifteen batches.
 */
const bodies = new JsonBytes(1 << 20);

function fromWire(bytes: Uint8Array): OutgoingBatch {
  const batch: OutgoingBatch = { sourceId: "", receivedAt: undefined, calls: [] };
  walkCallBatch(new WireReader(bytes), bytes.length, {
    sourceId: (reader, start, end) => (batch.sourceId = reader.text(start, end)),
    receivedAt: (reader, start, end) => (batch.receivedAt = new Date(reader.timestampMillis(start, end))),
    call: (reader, start, end) => batch.calls.push(wireCall(reader, start, end)),
  });
  return batch;
}

function wireCall(reader: WireReader, start: number, end: number): OutgoingCall {
  bodies.start();
  const written = writeWebhookBody(reader, start, end, bodies);
  const call = new WireCall(reader, start, end, written, written.hasPayload ? bodies.finish() : undefined);
  // Uncommon: the integrations object decides whether the call goes to webhooks at all, so it is decoded (with the call).
  if (written.hasIntegrations) call.integrations = call.call().integrations;
  return call;
}

/** A call read by the writer: what it needs now is at hand, the rest is decoded from its bytes if asked for. */
class WireCall implements OutgoingCall {
  readonly receivedAt: Date | undefined;
  integrations: Record<string, unknown> | undefined = undefined;
  private decoded: Call | undefined;

  constructor(
    private readonly reader: WireReader,
    private readonly start: number,
    private readonly end: number,
    private readonly written: WrittenCall,
    readonly body: Buffer | undefined,
  ) {
    this.receivedAt = written.receivedAt;
  }

  get messageId(): string {
    return this.reader.text(this.written.messageIdStart, this.written.messageIdEnd);
  }

  call(): Call {
    // The writer walked every field the decoder reads (and left repeats to it), so these bytes decode.
    return (this.decoded ??= Call.decode(this.encoded()));
  }

  encoded(): Uint8Array {
    return this.reader.buf.subarray(this.start, this.end);
  }

  readFields(finder: CallFieldFinder): void {
    finder.read(this.reader.buf, this.start, this.end);
  }
}
