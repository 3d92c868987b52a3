import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { commonEnvSchema, parseEnv, portVar } from "./env-config.js";
import { isConfigError } from "./errors.js";

const schema = commonEnvSchema.extend({ PORT: portVar(8080) });

describe("parseEnv", () => {
  it("resolves defaults", () => {
    const config = parseEnv(schema, {});
    expect(config).toMatchObject({
      NATS_URL: ["nats://127.0.0.1:4222"],
      SWITCHYARD_NAMESPACE: "switchyard",
      LOG_LEVEL: "info",
      PORT: 8080,
    });
  });

  it("splits a NATS server list", () => {
    expect(parseEnv(schema, { NATS_URL: "nats://a:4222, nats://b:4222" }).NATS_URL).toEqual(["nats://a:4222", "nats://b:4222"]);
  });

  it("names every bad variable and its rule", () => {
    let caught: unknown;
    try {
      parseEnv(schema, { PORT: "70000", SWITCHYARD_NAMESPACE: "Bad-Name", SWITCHYARD_STREAM_REPLICAS: "2" });
    } catch (error) {
      caught = error;
    }
    expect(isConfigError(caught)).toBe(true);
    const message = (caught as Error).message;
    expect(message).toMatch(/PORT: must be between 0 and 65535/);
    expect(message).toMatch(/SWITCHYARD_NAMESPACE: must be lowercase/);
    expect(message).toMatch(/SWITCHYARD_STREAM_REPLICAS: must be 1, 3 or 5/);
  });

  it("reads the worker count, with auto meaning one per core", () => {
    expect(parseEnv(schema, {}).SWITCHYARD_WORKERS).toBe(1);
    expect(parseEnv(schema, { SWITCHYARD_WORKERS: "3" }).SWITCHYARD_WORKERS).toBe(3);
    expect(parseEnv(schema, { SWITCHYARD_WORKERS: "auto" }).SWITCHYARD_WORKERS).toBe(availableParallelism());
    for (const bad of ["0", "-1", "1.5", "many"]) {
      expect(() => parseEnv(schema, { SWITCHYARD_WORKERS: bad })).toThrow(/SWITCHYARD_WORKERS: must be a positive integer or "auto"/);
    }
  });

  it("works with any zod object schema", () => {
    expect(parseEnv(z.object({ A: z.string().default("x") }), {})).toEqual({ A: "x" });
  });
});
