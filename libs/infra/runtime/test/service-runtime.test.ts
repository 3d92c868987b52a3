import { createServer } from "node:net";
import { credentials, makeGenericClientConstructor, Metadata, type Client, type ServiceError as GrpcError } from "@grpc/grpc-js";
import { createLogger, GRPC_HANDLED_METRIC } from "@switchyard/platform";
import { freePort, NatsServer, uniqueNamespace } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServiceRuntime, type RuntimeConfig } from "../src/index.js";

/** The shared start-up against a real nats-server: what it opens, the order it stops in, and what it closes after a failed start. */

const ADMIN_TOKEN = "admin-token-for-the-runtime-test";
const logger = createLogger({ service: "runtime-test", level: "silent" });
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const parse = (bytes: Buffer): unknown => JSON.parse(bytes.toString());
const definition = {
  ping: {
    path: "/test.v1.PingService/Ping",
    requestStream: false,
    responseStream: false,
    requestSerialize: json,
    requestDeserialize: parse,
    responseSerialize: json,
    responseDeserialize: parse,
  },
};

let nats: NatsServer;

beforeAll(async () => {
  nats = await NatsServer.start();
});
afterAll(async () => {
  await nats?.stop();
});

function config(): RuntimeConfig {
  return {
    HOST: "127.0.0.1",
    NATS_URL: [nats.url],
    SWITCHYARD_NAMESPACE: uniqueNamespace(),
    SWITCHYARD_STREAM_REPLICAS: 1,
    SWITCHYARD_DUPLICATE_WINDOW_MS: 60_000,
    SWITCHYARD_CALLS_MAX_AGE_MS: 3_600_000,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    SHUTDOWN_GRACE_MS: 1_000,
  };
}

function portRefuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen({ host: "127.0.0.1", port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

describe("startServiceRuntime", () => {
  it("serves the service's gRPC with admin auth and metrics, is ready, and stops its parts in order", async () => {
    const steps: string[] = [];
    const runtime = await startServiceRuntime({
      name: "runtime-test",
      config: config(),
      logger,
      ports: { grpc: 0, ops: 0 },
      start: async ({ workspace }) => ({
        grpc: [
          {
            name: "test.v1.PingService",
            definition,
            implementation: { ping: async () => ({ sources: workspace.sourceIds().length }) },
            auth: "admin",
          },
        ],
        stopAccepting: async () => void steps.push("stopAccepting"),
        finish: async () => void steps.push("finish"),
        own: { extra: 7 },
      }),
    });
    expect(runtime.own.extra).toBe(7);
    const ready = await fetch(`http://127.0.0.1:${runtime.opsPort}/readyz`);
    expect(ready.status).toBe(200);

    const client = new (makeGenericClientConstructor(definition, "PingService"))(
      `127.0.0.1:${runtime.grpcPort}`,
      credentials.createInsecure(),
    ) as unknown as Client & {
      ping: (request: unknown, metadata: Metadata, callback: (error: GrpcError | null, response: unknown) => void) => void;
    };
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
    const answer = await new Promise((resolve, reject) =>
      client.ping({}, metadata, (error, response) => (error ? reject(error) : resolve(response))),
    );
    expect(answer).toEqual({ sources: 0 });
    client.close();
    const metrics = await (await fetch(`http://127.0.0.1:${runtime.opsPort}/metrics`)).text();
    expect(metrics).toContain(`${GRPC_HANDLED_METRIC}{service="test.v1.PingService",method="Ping",code="OK"} 1`);

    await runtime.stop();
    expect(steps).toEqual(["stopAccepting", "finish"]);
    expect(await portRefuses(runtime.opsPort)).toBe(true);
    expect(await portRefuses(runtime.grpcPort)).toBe(true);
  });

  it("closes what it opened when start-up fails, and rethrows the error as it was (a gRPC port in use)", async () => {
    const taken = createServer();
    const grpcPort = await freePort();
    await new Promise<void>((resolve) => taken.listen(grpcPort, "127.0.0.1", () => resolve()));
    const opsPort = await freePort();
    const steps: string[] = [];
    try {
      await expect(
        startServiceRuntime({
          name: "runtime-test",
          config: config(),
          logger,
          ports: { grpc: grpcPort, ops: opsPort },
          start: async () => ({
            grpc: [],
            stopAccepting: async () => void steps.push("stopAccepting"),
            finish: async () => void steps.push("finish"),
          }),
        }),
      ).rejects.toMatchObject({ code: "EADDRINUSE" });
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
    expect(steps).toEqual(["stopAccepting", "finish"]);
    expect(await portRefuses(opsPort)).toBe(true);
  });
});
