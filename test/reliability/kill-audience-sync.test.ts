import { NatsServer, waitFor } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { AudienceClient, isGrpcError } from "@switchyard/testkit/fixtures/audience-sync";
import { ADMIN_TOKEN, Pipeline, workspaceFor } from "./support/pipeline.js";
import { profile, scenarioSeed, SeededRandom } from "./support/profile.js";
import { recordScenario } from "./support/results.js";
import { countEndToEnd } from "./support/run-summary.js";
import { FAST_RETRY_ENV } from "./support/service-kill.js";
import { Tally } from "./support/tally.js";

const FILE = "test/reliability/kill-audience-sync.test.ts";
const AUDIENCE = "Reliability Members";
const TRAIT = "reliability_members";
/** Identify calls per bus batch (PUBLISHED_BATCH_CALLS of BatchPublisher.publishCalls). */
const EMIT_BATCH = 500;

const userId = (n: number) => `member-${String(n).padStart(7, "0")}`;
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => userId(from + i));

/**
 * Sync k's snapshot is the window [k·shift, k·shift + members): the first
 * sync makes every member join, each later one makes `shift` members leave
 * and `shift` new ones join. Each (user, membership) change happens once in
 * the whole run, so it is what the receiver counts.
 */
function syncPlan(syncs: number, members: number) {
  const shift = Math.floor(members / 5);
  return Array.from({ length: syncs }, (_, k) => {
    const snapshot = range(k * shift, k * shift + members);
    const changes =
      k === 0
        ? snapshot.map((user) => `${user}:true`)
        : [
            ...range((k - 1) * shift, k * shift).map((user) => `${user}:false`),
            ...range((k - 1) * shift + members, k * shift + members).map((user) => `${user}:true`),
          ];
    return { syncId: `reliability-sync-${k}`, snapshot, changes };
  });
}

describe("audience-sync SIGKILLed during syncs", () => {
  it(
    "a sync repeated after the kill emits every change, and each arrives",
    async () => {
      const seed = scenarioSeed();
      const rng = new SeededRandom(seed);
      process.stdout.write(`kill-audience-sync: seed ${seed}\n`);
      const nats = await NatsServer.start();
      const tally = await Tally.start({ keyOf: (body) => `${body?.userId}:${body?.traits?.[TRAIT]}` });
      let pipeline: Pipeline | undefined;
      let client: AudienceClient | undefined;
      try {
        pipeline = await Pipeline.start({
          natsUrl: nats.url,
          workspace: workspaceFor({ hook: tally.url() }),
          services: ["delivery", "audience-sync"],
          env: { delivery: FAST_RETRY_ENV },
        });
        const startedAt = Date.now();
        const accepted = new Set<string>();
        const kills: { sync: number; afterBatches: number; syncFinishedFirst: boolean; repeat: string }[] = [];
        for (const [k, sync] of syncPlan(profile.kills, profile.audienceMembers).entries()) {
          const header = { sourceId: "web", name: AUDIENCE, syncId: sync.syncId, expectedCount: sync.snapshot.length };
          client = new AudienceClient(pipeline.audienceTarget);
          const stored = async () => (await pipeline!.jsm.streams.info(pipeline!.names.callsStream)).state.messages;
          const before = await stored();
          // Kill once a seeded number of the sync's batches is on the bus (0: while the snapshot is still coming in).
          const afterBatches = rng.int(0, Math.max(0, Math.ceil(sync.changes.length / EMIT_BATCH) - 1));
          let syncDone = false;
          const attempt = client
            .audienceSnapshot(header, sync.snapshot, { chunk: 1000, token: ADMIN_TOKEN })
            .then(
              () => "finished",
              (error: unknown) => (isGrpcError(error) ? `refused: ${error.code}` : `failed: ${String(error)}`),
            )
            .finally(() => (syncDone = true));
          await waitFor("the kill moment", async () => syncDone || (await stored()) - before >= afterBatches, {
            timeoutMs: profile.timeoutMs,
            intervalMs: 2,
          });
          const syncFinishedFirst = syncDone;
          await pipeline.kill("audience-sync");
          await attempt;
          client.close();
          await pipeline.startService("audience-sync");

          // The operator repeats the sync with the same id: it emits what the killed one had not committed.
          client = new AudienceClient(pipeline.audienceTarget);
          const repeat = await client.audienceSnapshot(header, sync.snapshot, { chunk: 1000, token: ADMIN_TOKEN });
          client.close();
          client = undefined;
          for (const change of sync.changes) accepted.add(change);
          kills.push({ sync: k, afterBatches, syncFinishedFirst, repeat: JSON.stringify(repeat.summary) });
        }
        const counts = await countEndToEnd(pipeline, tally, accepted, profile.timeoutMs / 2);
        await recordScenario(
          {
            scenario: "kill-audience-sync",
            file: FILE,
            seed,
            ...counts,
            seconds: (Date.now() - startedAt) / 1000,
            details: { members: profile.audienceMembers, syncs: profile.kills, kills, deadLetters: await pipeline.deadLetters() },
          },
          pipeline.nc,
        );
        // Nothing but the planned changes arrived.
        expect(tally.distinct).toBe(accepted.size);
        expect(counts.missingSample).toEqual([]);
        expect(counts.lost).toBe(0);
      } finally {
        client?.close();
        await pipeline?.dispose();
        await tally.close();
        await nats.dispose();
      }
    },
    profile.timeoutMs,
  );
});
