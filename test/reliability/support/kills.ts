import { waitFor } from "@switchyard/testkit";
import type { Pipeline, ServiceName } from "./pipeline.js";
import type { SeededRandom } from "./profile.js";

export interface KillRecord {
  /** Progress (calls accepted or delivered, as the scenario measures it) when the kill came. */
  atProgress: number;
  /** How long the service stayed down before its restart began. */
  downMs: number;
}

/**
 * SIGKILLs `service` `kills` times at seeded random points of a run and
 * starts it again after a seeded random downtime (0 to 1 s). A point is a
 * fraction of `total` on the scenario's progress measure; a kill whose point
 * the run never reaches (it finished first) comes when the run is done.
 */
export async function killDuringRun(
  pipeline: Pipeline,
  service: ServiceName,
  options: { rng: SeededRandom; kills: number; total: number; progress: () => number; finished: () => boolean; timeoutMs: number },
): Promise<KillRecord[]> {
  const records: KillRecord[] = [];
  for (const fraction of options.rng.fractions(options.kills)) {
    const downMs = options.rng.int(0, 1_000);
    await waitFor(
      `progress ${Math.round(fraction * options.total)} before killing ${service}`,
      () => options.progress() >= fraction * options.total || options.finished(),
      {
        timeoutMs: options.timeoutMs,
        intervalMs: 5,
      },
    );
    records.push({ atProgress: options.progress(), downMs });
    await pipeline.kill(service);
    // A deliberate outage of a chosen length, not a wait for something to happen.
    await new Promise((resolve) => setTimeout(resolve, downMs));
    await pipeline.startService(service);
  }
  return records;
}
