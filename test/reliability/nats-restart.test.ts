import { describe, expect, it } from "vitest";
import { loadWithFault } from "./support/load-with-fault.js";
import { profile, scenarioSeed, SeededRandom } from "./support/profile.js";
import { recordScenario } from "./support/results.js";
import { withTalliedPipeline } from "./support/service-kill.js";

const FILE = "test/reliability/nats-restart.test.ts";

describe("nats-server restarted during load", () => {
  it(
    "clients see UNAVAILABLE / 503 while it is down, and nothing accepted is lost",
    async () => {
      const seed = scenarioSeed();
      const rng = new SeededRandom(seed);
      process.stdout.write(`nats-restart: seed ${seed}\n`);
      await withTalliedPipeline(async ({ nats, tally, pipeline }) => {
        const [atFraction] = rng.fractions(1, 0.2, 0.6);
        const downMs = rng.int(1_000, 3_000);
        const run = await loadWithFault(pipeline, tally, {
          prefix: "nats-restart",
          atFraction: atFraction!,
          fault: async () => {
            // SIGKILL, as a crash; the store on disk is kept and the server comes back on the same port.
            await nats.stop({ kill: true });
            await new Promise((resolve) => setTimeout(resolve, downMs));
            await nats.start();
            return { downMs };
          },
        });
        await recordScenario(
          {
            scenario: "nats-restart",
            file: FILE,
            seed,
            ...run.counts,
            seconds: run.seconds,
            details: {
              ...run.fault,
              acceptedAtRestart: run.acceptedAtFault,
              refusals: run.refusals,
              deadLetters: await pipeline.deadLetters(),
            },
          },
          pipeline.nc,
        );
        // While NATS was down the clients were told to come back, with the right code and nothing else.
        expect(run.refusals["grpc:UNAVAILABLE"]).toBeGreaterThan(0);
        expect(Object.keys(run.refusals).filter((kind) => kind !== "grpc:UNAVAILABLE" && kind !== "http:503")).toEqual([]);
        expect(run.counts.accepted).toBe(profile.outageCalls);
        expect(run.counts.missingSample).toEqual([]);
        expect(run.counts.lost).toBe(0);
      });
    },
    profile.timeoutMs,
  );
});
