import { waitFor, type WebhookReceiver } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/**
 * SSRF protection through the whole delivery service: receivers on loopback
 * get nothing unless DELIVERY_ALLOWED_CIDRS allows loopback, and a refusal is
 * a permanent failure recorded in the delivery log with its reason.
 */

const scope = deliveryPerTest();

function start(url: string, env: Record<string, string>): Promise<DeliveryFixture> {
  return scope.start({ workspace: webSourceTo("wk_ssrf_test_000001", { hook: url }), env });
}

/** No allowlist at all: what a production deployment has unless its operator sets one. */
const NO_ALLOWLIST = { DELIVERY_ALLOWED_CIDRS: "" };

describe("outbound address policy", () => {
  it.each([
    ["by address", (r: WebhookReceiver) => r.url(), "address refused: 127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS"],
    [
      "by a name that resolves to 127.0.0.1",
      (r: WebhookReceiver) => `http://localhost:${r.port}/hook`,
      /^address refused: localhost resolves to (127\.0\.0\.1: loopback \(127\.0\.0\.0\/8\)|::1: loopback \(::1\/128\)), not in DELIVERY_ALLOWED_CIDRS$/,
    ],
  ])("sends nothing to a loopback receiver %s without an allowlist, and logs why", async (_name, urlOf, reason) => {
    const hook = await scope.receiver();
    const f = await start(urlOf(hook), NO_ALLOWLIST);
    await f.publishCalls("web", [busCall("m-refused", trackPayload())]);

    const logged = await waitFor("the refusal and the dead letter in the delivery log", async () => {
      const attempts = (await f.admin.listDeliveryAttempts({ destinationId: "hook", messageId: "m-refused" })).attempts;
      return attempts.length >= 2 ? attempts : undefined;
    });
    await f.settled();

    // Permanent: not retried (one attempt), dead-lettered (replayable once the allowlist is fixed).
    // Newest first: the dead letter, then the refused request.
    expect(logged.map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [1, "dead_lettered"],
      [1, "permanent"],
    ]);
    expect(logged[1]!.status).toBe(0);
    if (typeof reason === "string") expect(logged[1]!.error).toBe(reason);
    else expect(logged[1]!.error).toMatch(reason);
    const dead = (await f.admin.listDeadLetters({ destinationId: "hook" })).entries;
    expect(dead.map((entry) => entry.deadLetter?.reason)).toEqual(["permanent_failure"]);
    expect(hook.connections).toBe(0);
    expect(hook.requests).toHaveLength(0);
  });

  it("delivers to loopback by name when the allowlist permits it (every other delivery test does so by address)", async () => {
    const hook = await scope.receiver();
    const f = await start(`http://localhost:${hook.port}/hook`, { DELIVERY_ALLOWED_CIDRS: "127.0.0.0/8,::1/128" });
    await f.publishCalls("web", [busCall("m-allowed", trackPayload())]);
    await waitFor("the delivery", () => hook.byMessageId("m-allowed").length >= 1);
    await f.settled();
    // Once the delivered attempt is listed, so is any failure of the destination before it.
    await f.admin.loggedAttempts({ destinationId: "hook", messageId: "m-allowed", outcomes: ["delivered"] }, 1);
    expect(
      (await f.admin.listDeliveryAttempts({ destinationId: "hook", outcomes: ["retryable", "permanent", "dead_lettered"] })).attempts,
    ).toEqual([]);
  });

  it("never follows a redirect, even to an allowed receiver: the 3xx is recorded and the target gets nothing", async () => {
    const target = await scope.receiver();
    const redirecting = await scope.receiver();
    redirecting.respond(() => ({ status: 307, headers: { Location: target.url() } }));
    const f = await start(redirecting.url(), {});
    await f.publishCalls("web", [busCall("m-redirect", trackPayload())]);

    const logged = await waitFor("the redirect in the delivery log", async () => {
      const attempts = (await f.admin.listDeliveryAttempts({ destinationId: "hook", messageId: "m-redirect" })).attempts;
      return attempts.length >= 2 ? attempts : undefined;
    });
    await f.settled();
    expect(logged.map((attempt) => [attempt.outcome, attempt.status])).toEqual([
      ["dead_lettered", 307],
      ["permanent", 307],
    ]);
    expect(redirecting.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(target.connections).toBe(0);
  });
});
