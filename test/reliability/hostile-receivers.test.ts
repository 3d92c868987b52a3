import { NatsServer, waitFor, type ResponsePlan } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { Load } from "./support/load.js";
import { Pipeline, workspaceFor } from "./support/pipeline.js";
import { profile } from "./support/profile.js";
import { recordScenario } from "./support/results.js";
import { FAST_RETRY_ENV } from "./support/service-kill.js";
import { Tally } from "./support/tally.js";

const FILE = "test/reliability/hostile-receivers.test.ts";
/**
 * The request timeout, shorter than the default 5 s to keep the run short, but
 * not so short that this (loaded) test process answering a megabyte body now
 * and then misses it: that would show up as duplicates, which are counted.
 */
const TIMEOUT_MS = 2_000;
/** 8 times DELIVERY_MAX_RESPONSE_BYTES (64 KB by default): the sender must stop reading. */
const HUGE_BODY = Buffer.alloc(512 * 1024, "x");

/**
 * How each destination's receiver answers: `hostile` until the healthy
 * destination has every call, then `recovered`. The outcome the contract
 * requires (docs/contract.md §7.3) is in `expect`.
 */
const BEHAVIOURS = {
  healthy: { hostile: { status: 200 }, recovered: { status: 200 }, expect: "delivered" },
  // Answers long after the request timeout: retryable (timeout). The late answer is a 503 so that the
  // tally (which counts 2xx answers when they are planned) never mistakes it for a delivery.
  slow: { hostile: { status: 503, delayMs: TIMEOUT_MS * 2 }, recovered: { status: 200 }, expect: "delivered" },
  // Closes the connection without an answer: retryable (reset).
  drops: { hostile: { destroy: true }, recovered: { status: 200 }, expect: "delivered" },
  // 500 until it recovers: retryable.
  flaky500: { hostile: { status: 500 }, recovered: { status: 200 }, expect: "delivered" },
  // 200 with a 512 KB body: delivered at once, the body read only up to the cap.
  hugeBody: { hostile: { status: 200, body: HUGE_BODY }, recovered: { status: 200, body: HUGE_BODY }, expect: "delivered" },
  // A redirect is never followed and not retried: one request per call, then a dead letter.
  redirect: {
    hostile: { status: 302, headers: { location: "REDIRECT_TARGET" } },
    recovered: { status: 302, headers: { location: "REDIRECT_TARGET" } },
    expect: "dead-lettered",
  },
} satisfies Record<string, { hostile: ResponsePlan; recovered: ResponsePlan; expect: "delivered" | "dead-lettered" }>;
type Kind = keyof typeof BEHAVIOURS;
const KINDS = Object.keys(BEHAVIOURS) as Kind[];

describe("slow, dropping, failing, huge-answering and redirecting receivers", () => {
  it(
    "each gets the contract's outcome, and the healthy destination gets every call while the others misbehave",
    async () => {
      const nats = await NatsServer.start();
      const tallies = new Map<Kind, Tally>();
      const redirectTarget = await Tally.start();
      let pipeline: Pipeline | undefined;
      try {
        for (const kind of KINDS) tallies.set(kind, await Tally.start());
        const tally = (kind: Kind) => tallies.get(kind)!;
        let hostile = true;
        for (const kind of KINDS) {
          tally(kind).plan = (): ResponsePlan => {
            const plan: ResponsePlan = hostile ? BEHAVIOURS[kind].hostile : BEHAVIOURS[kind].recovered;
            if ("headers" in plan && plan.headers?.location) return { ...plan, headers: { location: redirectTarget.url("/redirected") } };
            return plan;
          };
        }
        pipeline = await Pipeline.start({
          natsUrl: nats.url,
          workspace: workspaceFor(Object.fromEntries(KINDS.map((kind) => [kind, tally(kind).url(`/${kind}`)]))),
          services: ["ingest", "delivery"],
          env: { delivery: { ...FAST_RETRY_ENV, DELIVERY_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) } },
        });

        const startedAt = Date.now();
        const load = new Load({
          grpcTarget: pipeline.ingestTarget,
          httpUrl: pipeline.httpUrl,
          total: profile.receiverCalls,
          batchSize: 50,
          callsPerSecond: profile.callsPerSecond,
          prefix: "hostile",
        });
        await load.run();
        const loadSeconds = (Date.now() - startedAt) / 1000;
        const accepted = load.accepted;

        // Isolation: the healthy destination gets everything while every other one is still misbehaving.
        await waitFor("the healthy destination to get every call", () => tally("healthy").missing(accepted).length === 0, {
          timeoutMs: profile.timeoutMs / 4,
          intervalMs: 50,
        });
        const healthySeconds = (Date.now() - startedAt) / 1000;
        for (const kind of ["slow", "drops", "flaky500"] as const) expect(tally(kind).distinct, `${kind} delivered while hostile`).toBe(0);
        hostile = false;

        const deadLetters = async (kind: Kind) =>
          (await pipeline!.jsm.streams.info(pipeline!.names.deadStream, { subjects_filter: pipeline!.names.deadSubject(kind) })).state
            .subjects?.[pipeline!.names.deadSubject(kind)] ?? 0;
        await waitFor(
          "every destination's outcome",
          async () => {
            for (const kind of KINDS) {
              const done =
                BEHAVIOURS[kind].expect === "delivered"
                  ? tally(kind).missing(accepted).length === 0
                  : (await deadLetters(kind)) === accepted.size;
              if (!done) return false;
            }
            return true;
          },
          { timeoutMs: profile.timeoutMs / 2, intervalMs: 250 },
        );
        await pipeline.waitSettled(profile.timeoutMs / 4);

        for (const kind of KINDS) {
          const t = tally(kind);
          const delivered = accepted.size - t.missing(accepted).length;
          const dead = await deadLetters(kind);
          const duplicates = t.duplicates();
          const requests = [...t.attempts.values()].reduce((sum, n) => sum + n, 0);
          await recordScenario(
            {
              scenario: `receiver-${kind}`,
              file: FILE,
              accepted: accepted.size,
              delivered,
              lost: accepted.size - delivered - dead,
              duplicates: duplicates.calls,
              extraRequests: duplicates.extraRequests,
              seconds: (Date.now() - startedAt) / 1000,
              details: {
                outcome: BEHAVIOURS[kind].expect,
                deadLettered: dead,
                requests,
                ...(kind === "healthy" ? { loadSeconds, allDeliveredAfterSeconds: healthySeconds } : {}),
              },
            },
            pipeline.nc,
          );
          expect(accepted.size - delivered - dead, `${kind}: calls neither delivered nor dead-lettered`).toBe(0);
          if (BEHAVIOURS[kind].expect === "delivered") expect(dead, `${kind} dead letters`).toBe(0);
        }
        // Never followed, never retried: one request per call, and nothing at the Location.
        expect(redirectTarget.receiver.handled).toBe(0);
        // A 302 is answered once per call and never retried; a second request for a call only comes when the first
        // one's answer was late (a timeout: this test process serves every receiver and is busy on a loaded machine).
        expect([...tally("redirect").attempts.values()].every((n) => n <= 2)).toBe(true);
        expect(tally("redirect").attempts.size).toBe(accepted.size);
      } finally {
        await pipeline?.dispose();
        for (const t of tallies.values()) await t.close();
        await redirectTarget.close();
        await nats.dispose();
      }
    },
    profile.timeoutMs,
  );
});
