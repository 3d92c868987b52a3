import { NatsServer } from "@switchyard/testkit";
import { expect } from "vitest";
import { killDuringRun } from "./kills.js";
import { Load } from "./load.js";
import { Pipeline, workspaceFor } from "./pipeline.js";
import { profile, scenarioSeed, SeededRandom } from "./profile.js";
import { recordScenario } from "./results.js";
import { countEndToEnd } from "./run-summary.js";
import { Tally } from "./tally.js";

/** Retries come back within a second, so a run never waits on back-off. */
export const FAST_RETRY_ENV = {
  DELIVERY_RETRY_BASE_DELAY_MS: "100",
  DELIVERY_RETRY_MAX_DELAY_MS: "1000",
  DELIVERY_FAILING_COOLDOWN_MS: "300",
};

/**
 * A nats-server, a Tally receiver and ingest and delivery (fast retries) sending to it; `run`
 * gets them, and they are closed after it however it ends.
 */
export async function withTalliedPipeline<T>(
  run: (parts: { nats: NatsServer; tally: Tally; pipeline: Pipeline }) => Promise<T>,
): Promise<T> {
  const nats = await NatsServer.start();
  const tally = await Tally.start();
  let pipeline: Pipeline | undefined;
  try {
    pipeline = await Pipeline.start({
      natsUrl: nats.url,
      workspace: workspaceFor({ hook: tally.url() }),
      services: ["ingest", "delivery"],
      env: { delivery: FAST_RETRY_ENV },
    });
    return await run({ nats, tally, pipeline });
  } finally {
    await pipeline?.dispose();
    await tally.close();
    await nats.dispose();
  }
}

/**
 * Scenario 1 for ingest or delivery: a client sends profile.killCalls calls
 * (a tenth through the Segment HTTP API) while `service` is SIGKILLed at
 * seeded random moments and restarted; every call the client saw accepted
 * must reach the receiver.
 */
export async function runServiceKillScenario(
  service: "ingest" | "delivery",
  file: string,
  options: {
    /** Checks of its own once every call arrived; what it returns joins the recorded details. */
    afterRun?: (run: {
      pipeline: Pipeline;
      tally: Tally;
      counts: Awaited<ReturnType<typeof countEndToEnd>>;
    }) => Promise<Record<string, unknown>>;
  } = {},
): Promise<void> {
  const seed = scenarioSeed();
  const rng = new SeededRandom(seed);
  process.stdout.write(`kill-${service}: seed ${seed} (RELIABILITY_SEED=${seed} repeats the kill schedule)\n`);
  await withTalliedPipeline(async ({ tally, pipeline }) => {
    const startedAt = Date.now();
    const load = new Load({
      grpcTarget: pipeline.ingestTarget,
      httpUrl: pipeline.httpUrl,
      total: profile.killCalls,
      batchSize: 50,
      callsPerSecond: profile.callsPerSecond,
      prefix: `kill-${service}`,
      httpEvery: 10,
    });
    let finished = false;
    let failed = false;
    // Settled here so a failed load stops the kills (below) instead of leaving a rejection unhandled.
    const running = load.run().then(
      () => ((finished = true), undefined),
      (error: unknown) => ((failed = true), error),
    );
    const kills = await killDuringRun(pipeline, service, {
      rng,
      kills: service === "delivery" ? profile.deliveryKills : profile.kills,
      total: profile.killCalls,
      // Ingest is killed as calls are accepted, delivery as they are delivered.
      progress: service === "ingest" ? () => load.acceptedCount : () => tally.distinct,
      finished: () => failed || (finished && (service === "ingest" || tally.distinct >= load.acceptedCount)),
      timeoutMs: profile.timeoutMs,
    });
    const loadError = await running;
    if (loadError !== undefined) throw loadError;
    const counts = await countEndToEnd(pipeline, tally, load.accepted, profile.timeoutMs / 2);
    const extra = (await options.afterRun?.({ pipeline, tally, counts })) ?? {};
    const figures = {
      scenario: `kill-${service}`,
      file,
      seed,
      ...counts,
      seconds: (Date.now() - startedAt) / 1000,
      details: {
        kills,
        refusals: load.refusals,
        deadLetters: await pipeline.deadLetters(),
        starts: pipeline.starts.get(service),
        ...extra,
      },
    };
    await recordScenario(figures, pipeline.nc);
    expect(kills).toHaveLength(service === "delivery" ? profile.deliveryKills : profile.kills);
    expect(counts.accepted).toBe(profile.killCalls);
    expect(counts.missingSample, "accepted calls that never arrived").toEqual([]);
    expect(counts.lost).toBe(0);
    expect(figures.details.deadLetters).toBe(0);
  });
}
