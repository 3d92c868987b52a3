import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ConfigError } from "./errors.js";
import { Readiness } from "./ops/readiness.js";
import { isTransientStartupError, StartupPatience } from "./startup-patience.js";

function jetStreamError(code: number, message: string): Error {
  const error = new Error(message) as Error & { code: number };
  error.name = "JetStreamApiError";
  error.code = code;
  return error;
}

function timeout(): Error {
  const error = new Error("timeout");
  error.name = "TimeoutError";
  return error;
}

describe("isTransientStartupError", () => {
  it("waits out what a cluster recovers from, and nothing else", () => {
    expect(isTransientStartupError(timeout())).toBe(true);
    expect(isTransientStartupError(jetStreamError(10008, "JetStream system temporarily unavailable"))).toBe(true);
    expect(isTransientStartupError(jetStreamError(10005, "no suitable peers for placement"))).toBe(true);
    expect(isTransientStartupError(new Error("stream SWITCHYARD_CALLS", { cause: timeout() }))).toBe(true);

    expect(isTransientStartupError(new ConfigError("SWITCHYARD_WORKSPACE_FILE: cannot read /x"))).toBe(false);
    const notEnabled = new Error("jetstream is not enabled");
    notEnabled.name = "JetStreamNotEnabled";
    expect(isTransientStartupError(notEnabled)).toBe(false);
    expect(isTransientStartupError(jetStreamError(10052, "invalid stream config"))).toBe(false);
    expect(isTransientStartupError("timeout")).toBe(false);
  });
});

describe("StartupPatience", () => {
  const logger = pino({ level: "silent" });

  it("tries a step again until it succeeds, saying in readiness what it waits for", async () => {
    const readiness = new Readiness();
    const patience = new StartupPatience({ logger, readiness, firstDelayMs: 1, maxDelayMs: 2 });
    const reasons: (string | undefined)[] = [];
    let tries = 0;
    const result = await patience.run("stream X", async () => {
      reasons.push((await readiness.check()).reason);
      if (++tries < 3) throw timeout();
      return "made";
    });
    expect(result).toBe("made");
    expect(tries).toBe(3);
    expect(reasons).toEqual([
      "service: starting: stream X",
      "service: starting: waiting for stream X: timeout",
      "service: starting: waiting for stream X: timeout",
    ]);
  });

  it("ends start-up at once on an error waiting cannot fix, naming the step", async () => {
    const patience = new StartupPatience({ logger, firstDelayMs: 1 });
    let tries = 0;
    const failing = patience.run("stream X", async () => {
      tries++;
      throw jetStreamError(10052, "invalid stream config");
    });
    await expect(failing).rejects.toThrow("stream X: invalid stream config");
    expect(tries).toBe(1);
    const config = new ConfigError("SWITCHYARD_STREAM_REPLICAS: must be 1, 3 or 5");
    await expect(patience.run("stream X", () => Promise.reject(config))).rejects.toBe(config);
  });
});
