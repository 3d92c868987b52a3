import { Call } from "@switchyard/contracts";
import { WireReader } from "../reader.js";
import { JsonBytes } from "./json-bytes.js";
import { writeWebhookBody } from "./webhook-body-writer.js";

/** A forwarded JSON body, as docs/contract.md §6.3-6.4 defines it. */
export type WebhookBody = Record<string, unknown>;

/** Where the bodies of decoded calls are written (slabs, as for first attempts; a body is a view of one). */
const bodies = new JsonBytes(1 << 16);

/**
 * The body a webhook receives for a decoded call, as the bytes sent and
 * signed. The call is encoded by the generated encoder and its body written
 * by the one body writer (webhook-body-writer.ts, exact mode), so a decoded
 * call and a batch's bytes get their body from the same rules. Throws for a
 * call without a payload, and, as Date#toISOString does, for a time the body
 * would show that no Date can format.
 */
export function webhookBodyBytes(call: Call): Buffer {
  if (!call.payload) throw new Error(`call ${call.messageId} has no payload`);
  const bytes = Call.encode(encodable(call)).finish();
  bodies.start();
  writeWebhookBody(new WireReader(bytes), 0, bytes.length, bodies, true);
  return bodies.finish();
}

/** The body a webhook receives for a call, as an object (its members in the body's order). */
export function webhookBody(call: Call): WebhookBody {
  return JSON.parse(webhookBodyBytes(call).toString("utf8")) as WebhookBody;
}

/**
 * The call without an Invalid Date, which the generated encoder cannot write: the
 * body shows the timestamp, else the accept time, so an invalid one of those is
 * refused as Date#toISOString refuses it; an accept time the body does not show is dropped.
 */
function encodable(call: Call): Call {
  const invalid = (date: Date | undefined) => date !== undefined && Number.isNaN(date.getTime());
  if (!invalid(call.timestamp) && !invalid(call.receivedAt)) return call;
  if (invalid(call.timestamp ?? call.receivedAt)) throw new RangeError("Invalid time value");
  return { ...call, receivedAt: undefined };
}
