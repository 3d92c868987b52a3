import { singleBody } from "@switchyard/mappings";
import type { ActionsDestination } from "@switchyard/workspace";
import type { OutgoingCall } from "../../pipeline/outgoing-calls.js";
import { waitUntil, type Pace } from "../../pipeline/rate-limits.js";
import type { RoundMode, RoundResult, SendContext, UrlAttempt } from "../kind.js";
import { roundResult } from "../round-result.js";
import { ActionBatches } from "./batches.js";
import { eventOf, mappingsOf, mappingsProblem } from "./mappings.js";
import { maskedRequest, requestHeaders } from "./request-headers.js";

/** Each delivery process's batches, by its sender (first attempts and retries share them). */
const batchesOf = new WeakMap<SendContext["sender"], ActionBatches>();

export function actionBatches(context: SendContext): ActionBatches {
  let batches = batchesOf.get(context.sender);
  if (!batches) {
    batches = new ActionBatches(context);
    batchesOf.set(context.sender, batches);
  }
  return batches;
}

/**
 * One call through a destination's mappings at `targets` (positions), in order, each mapping
 * whose trigger takes the call making its request of it: sent now, or, for a batching mapping,
 * put in its batch (see ActionBatches), the round waiting for the batch's answer. Each mapping is
 * owed the call, so a retry, too, goes to every target it is given (`mode` is for alternatives).
 * A mapping that cannot make a valid request of the call (its URL is not http(s), a header value
 * not HTTP) fails for good there without a request, the reason in the attempt log. With a `pace`,
 * the n-th request sent now goes no earlier than `pace.at + n × pace.intervalMs`.
 */
export async function sendMapped(
  context: SendContext,
  destination: ActionsDestination,
  call: OutgoingCall,
  targets: readonly number[],
  _mode: RoundMode,
  pace?: Pace,
): Promise<RoundResult> {
  const { sender, masker } = context;
  const mappings = mappingsOf(destination);
  const problem = mappingsProblem(destination);
  const event = eventOf(call);
  const attempts: UrlAttempt[] = [];
  const batched: Promise<UrlAttempt[]>[] = [];
  let sent = 0;

  for (const index of targets) {
    const mapping = mappings[index];
    if (problem !== undefined || !mapping) {
      attempts.push(failed(index, `mapping ${index}: the destination's mappings are not valid: ${problem ?? "no such mapping"}`));
      continue;
    }
    // The mappings may have changed since the call was given these targets.
    if (!mapping.enabled || !mapping.trigger.matches(event)) continue;
    const made = mapping.request(event);
    if (!made.ok) {
      attempts.push(failed(index, `mapping "${mapping.name}": ${made.reason}`));
      continue;
    }
    const { request } = made;
    if (mapping.batching) {
      batched.push(actionBatches(context).add(destination, index, mapping, call.messageId, request));
      continue;
    }
    if (pace) await waitUntil(pace.at + sent * pace.intervalMs);
    sent++;
    const body = singleBody(request);
    const headers = requestHeaders(request, body, destination.settings, call.messageId);
    const result = await sender.send(request.url, headers, body, destination.id, request.method);
    attempts.push({
      ...result,
      urlIndex: index,
      url: request.url,
      request: { method: request.method, entry: maskedRequest(request, headers, masker), headers, body },
    });
  }
  for (const made of await Promise.all(batched)) attempts.push(...made);

  if (attempts.length === 0) {
    // Nothing of the call is wanted any more (its mappings were changed or disabled since it was routed).
    attempts.push(failed(-1, "no enabled mapping's trigger takes the call any more"));
  }
  return roundResult(attempts, "each owed");
}

/** A mapping's request that could not be made: permanent, no request sent. */
function failed(index: number, reason: string): UrlAttempt {
  return { status: 0, error: reason, latencyMs: 0, outcome: "permanent", retryAfterMs: undefined, urlIndex: index, url: "" };
}
