import { describe, expect, it } from "vitest";
import { busCall, deliveryPerTest, trackPayload, webSourceTo } from "@switchyard/testkit/fixtures/delivery";

const scope = deliveryPerTest();

/** A call's `integrations` and whether the Webhooks destination must get it (docs/contract.md §8.1). */
const cases: { messageId: string; integrations: Record<string, unknown> | undefined; delivered: boolean }[] = [
  { messageId: "m-all-off", integrations: { All: false }, delivered: false },
  { messageId: "m-webhooks-off", integrations: { Webhooks: false }, delivered: false },
  { messageId: "m-all-on-webhooks-off", integrations: { All: true, Webhooks: false }, delivered: false },
  { messageId: "m-all-off-webhooks-on", integrations: { All: false, Webhooks: true }, delivered: true },
  { messageId: "m-webhooks-object", integrations: { Webhooks: { x: 1 } }, delivered: true },
  { messageId: "m-all-off-webhooks-object", integrations: { All: false, Webhooks: { x: 1 } }, delivered: true },
  // The name is case-sensitive: "webhooks" is some other destination.
  { messageId: "m-lowercase-off", integrations: { webhooks: false }, delivered: true },
  { messageId: "m-other-off", integrations: { Mixpanel: false }, delivered: true },
  { messageId: "m-none", integrations: undefined, delivered: true },
];

describe("integrations", () => {
  it("let through exactly the calls that leave the Webhooks destination on", async () => {
    const receiver = await scope.receiver();
    const fixture = await scope.start({ workspace: webSourceTo("wk_integrations_t01", { hook: receiver.url() }) });

    // Blocked calls first, allowed ones after them, all in one batch: once the batch is settled,
    // every request it will ever cause has been made, so an absent call was really blocked.
    const ordered = [...cases].sort((a, b) => Number(a.delivered) - Number(b.delivered));
    await fixture.publishCalls(
      "web",
      ordered.map(({ messageId, integrations }) => busCall(messageId, trackPayload(), { integrations })),
    );
    await fixture.settled();

    const arrived = receiver.requests.map((request) => request.json.messageId as string).sort();
    const expected = cases
      .filter((c) => c.delivered)
      .map((c) => c.messageId)
      .sort();
    expect(arrived).toEqual(expected);
    // Blocked calls are skipped, not failed: nothing in the delivery log or the dead letters. (Once
    // the delivered attempts are listed, so is any failure of the destination before them.)
    await fixture.admin.loggedAttempts({ destinationId: "hook", outcomes: ["delivered"] }, expected.length);
    expect(
      (await fixture.admin.listDeliveryAttempts({ destinationId: "hook", outcomes: ["retryable", "permanent", "dead_lettered"] })).attempts,
    ).toEqual([]);
    expect((await fixture.admin.listDeadLetters({ destinationId: "hook" })).entries).toEqual([]);
  });
});
