import { describe, it } from "vitest";
import { expectExactDeliveryStats } from "./support/delivery-stats.js";
import { profile } from "./support/profile.js";
import { runServiceKillScenario } from "./support/service-kill.js";

describe("delivery SIGKILLed at random moments during a run", () => {
  // A killed replica's unacknowledged batches come back after the consumer's 30 s ack wait, so each kill costs that much.
  it(
    "every accepted call reaches the receiver at least once, and GetDeliveryStats counts each delivered call once",
    () =>
      runServiceKillScenario("delivery", "test/reliability/kill-delivery.test.ts", {
        afterRun: ({ pipeline, tally, counts }) => expectExactDeliveryStats(pipeline, tally, counts),
      }),
    profile.timeoutMs,
  );
});
