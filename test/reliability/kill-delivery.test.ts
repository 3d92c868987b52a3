import { describe, it } from "vitest";
import { profile } from "./support/profile.js";
import { runServiceKillScenario } from "./support/service-kill.js";

describe("delivery SIGKILLed at random moments during a run", () => {
  // A killed replica's unacknowledged batches come back after the consumer's 30 s ack wait, so each kill costs that much.
  it(
    "every accepted call reaches the receiver at least once",
    () => runServiceKillScenario("delivery", "test/reliability/kill-delivery.test.ts"),
    profile.timeoutMs,
  );
});
