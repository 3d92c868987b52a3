import { describe, it } from "vitest";
import { profile } from "./support/profile.js";
import { runServiceKillScenario } from "./support/service-kill.js";

describe("ingest SIGKILLed at random moments during a run", () => {
  it(
    "every call a client saw accepted reaches the receiver",
    () => runServiceKillScenario("ingest", "test/reliability/kill-ingest.test.ts"),
    profile.timeoutMs,
  );
});
