import { waitFor } from "@switchyard/testkit";
import type { Pipeline } from "./pipeline.js";
import type { ScenarioFigures } from "./results.js";
import type { Tally } from "./tally.js";

/**
 * Waits until every accepted call reached the receiver (or the deadline
 * passes: then the missing ones are reported as lost, not hidden) and
 * delivery has settled, then counts: accepted, delivered, lost, duplicates.
 */
export async function countEndToEnd(
  pipeline: Pipeline,
  tally: Tally,
  accepted: Set<string>,
  timeoutMs: number,
): Promise<Pick<ScenarioFigures, "accepted" | "delivered" | "lost" | "duplicates" | "extraRequests"> & { missingSample: string[] }> {
  await waitFor(`all ${accepted.size} accepted calls at the receiver`, () => tally.missing(accepted).length === 0, {
    timeoutMs,
    intervalMs: 250,
  }).catch(() => undefined);
  await pipeline.waitSettled(timeoutMs).catch(() => undefined);
  const missing = tally.missing(accepted);
  const duplicates = tally.duplicates();
  return {
    accepted: accepted.size,
    delivered: accepted.size - missing.length,
    lost: missing.length,
    duplicates: duplicates.calls,
    extraRequests: duplicates.extraRequests,
    missingSample: missing.slice(0, 20),
  };
}
