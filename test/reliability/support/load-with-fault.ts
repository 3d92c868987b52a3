import { waitFor } from "@switchyard/testkit";
import { Load } from "./load.js";
import type { Pipeline } from "./pipeline.js";
import { profile } from "./profile.js";
import { countEndToEnd } from "./run-summary.js";
import type { Tally } from "./tally.js";

/**
 * Runs profile.outageCalls calls through `pipeline` (every fifth batch over
 * HTTP) and calls `fault` once the client has seen `atFraction` of them
 * accepted; returns the end-to-end count and the client's refusals.
 */
export async function loadWithFault(
  pipeline: Pipeline,
  tally: Tally,
  options: { prefix: string; atFraction: number; fault: () => Promise<Record<string, unknown>> },
) {
  const startedAt = Date.now();
  const load = new Load({
    grpcTarget: pipeline.ingestTarget,
    httpUrl: pipeline.httpUrl,
    total: profile.outageCalls,
    batchSize: 50,
    callsPerSecond: profile.callsPerSecond,
    prefix: options.prefix,
    httpEvery: 5,
  });
  let settled = false;
  const running = load.run().then(
    () => undefined,
    (error: unknown) => error,
  );
  void running.finally(() => (settled = true));
  await waitFor("the fault moment", () => settled || load.acceptedCount >= options.atFraction * profile.outageCalls, {
    timeoutMs: profile.timeoutMs,
    intervalMs: 5,
  });
  const acceptedAtFault = load.acceptedCount;
  const fault = await options.fault();
  const loadError = await running;
  if (loadError !== undefined) throw loadError;
  const counts = await countEndToEnd(pipeline, tally, load.accepted, profile.timeoutMs / 2);
  return { counts, refusals: load.refusals, acceptedAtFault, fault, seconds: (Date.now() - startedAt) / 1000 };
}
