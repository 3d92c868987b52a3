import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  status as GrpcStatus,
  type Client,
  type ServiceDefinition,
  type ServiceError as GrpcError,
} from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createLogger,
  GRPC_HANDLED_METRIC,
  GRPC_HANDLING_SECONDS_METRIC,
  Registry,
  ServiceError,
  startGrpcServer,
  type ClientStreamingMethod,
  type GrpcServerHandle,
  type UnaryMethod,
} from "../src/index.js";

/**
 * What startGrpcServer does once for every registration: the admin token,
 * thrown errors as statuses, undecodable requests, and per-method metrics.
 * Real server and client on loopback; the services are JSON-coded stand-ins.
 */

const ADMIN_TOKEN = "admin-token-for-the-grpc-server-test";
type Message = { text?: string };

const json = {
  requestSerialize: (value: Message) => Buffer.from(JSON.stringify(value)),
  requestDeserialize: (bytes: Buffer): Message => JSON.parse(bytes.toString()) as Message,
  responseSerialize: (value: Message) => Buffer.from(JSON.stringify(value)),
  responseDeserialize: (bytes: Buffer): Message => JSON.parse(bytes.toString()) as Message,
};
const method = (service: string, name: string, requestStream = false) => ({
  path: `/test.v1.${service}/${name}`,
  requestStream,
  responseStream: false,
  ...json,
});
const adminDefinition = {
  echo: method("AdminService", "Echo"),
  fail: method("AdminService", "Fail"),
  join: method("AdminService", "Join", true),
} satisfies ServiceDefinition;
const openDefinition = { echo: method("OpenService", "Echo") } satisfies ServiceDefinition;

let server: GrpcServerHandle;
let registry: Registry;
let admin: Client & Record<string, (...args: unknown[]) => unknown>;
let open: Client & Record<string, (...args: unknown[]) => unknown>;
let handlerRuns = 0;

beforeAll(async () => {
  registry = new Registry();
  const echo: UnaryMethod<Message, Message> = async (request) => {
    handlerRuns++;
    if (request.text === "refuse") throw new ServiceError("NOT_FOUND", "text: nothing called refuse");
    return { text: request.text ?? "" };
  };
  const join: ClientStreamingMethod<Message, Message> = (call) =>
    new Promise((resolve, reject) => {
      handlerRuns++;
      const parts: string[] = [];
      call.on("data", (message: Message) => parts.push(message.text ?? ""));
      call.on("end", () => resolve({ text: parts.join("+") }));
      call.on("error", reject);
    });
  server = await startGrpcServer({
    host: "127.0.0.1",
    port: 0,
    logger: createLogger({ service: "grpc-server-test", level: "silent" }),
    adminToken: ADMIN_TOKEN,
    registry,
    services: [
      {
        name: "test.v1.AdminService",
        definition: adminDefinition,
        implementation: {
          echo,
          fail: async (request: Message) => {
            throw new RangeError(request.text === "domain" ? "a domain error" : "a bug's message, never shown");
          },
          join,
        },
        auth: "admin",
        mapError: (error) =>
          error instanceof RangeError && error.message === "a domain error" ? new ServiceError("ABORTED", "text: a domain error") : error,
      },
      { name: "test.v1.OpenService", definition: openDefinition, implementation: { echo }, auth: "handler", metrics: false },
    ],
  });
  const address = `127.0.0.1:${server.port}`;
  admin = new (makeGenericClientConstructor(adminDefinition, "AdminService"))(address, credentials.createInsecure()) as typeof admin;
  open = new (makeGenericClientConstructor(openDefinition, "OpenService"))(address, credentials.createInsecure()) as typeof open;
});

afterAll(async () => {
  admin?.close();
  open?.close();
  await server?.shutdown(1_000);
});

function bearer(token: string): Metadata {
  const metadata = new Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}

function unary(client: typeof admin, name: string, request: unknown, metadata = new Metadata()): Promise<Message> {
  return new Promise((resolve, reject) => {
    client[name]!(request, metadata, (error: GrpcError | null, response: Message) => (error ? reject(error) : resolve(response)));
  });
}

function stream(texts: string[], metadata: Metadata): Promise<Message> {
  return new Promise((resolve, reject) => {
    const call = admin.join!(metadata, (error: GrpcError | null, response: Message) => (error ? reject(error) : resolve(response))) as {
      write(message: Message): void;
      end(): void;
    };
    for (const text of texts) call.write({ text });
    call.end();
  });
}

describe("startGrpcServer", () => {
  it('checks the admin token once for every method of an `auth: "admin"` service, before its handler runs', async () => {
    const before = handlerRuns;
    await expect(unary(admin, "echo", { text: "x" })).rejects.toMatchObject({
      code: GrpcStatus.UNAUTHENTICATED,
      details: 'missing admin token: send "authorization: Bearer <token>"',
    });
    await expect(unary(admin, "echo", { text: "x" }, bearer("not-the-token"))).rejects.toMatchObject({
      code: GrpcStatus.UNAUTHENTICATED,
      details: "wrong admin token",
    });
    await expect(stream(["a"], bearer("not-the-token"))).rejects.toMatchObject({
      code: GrpcStatus.UNAUTHENTICATED,
      details: "wrong admin token",
    });
    expect(handlerRuns).toBe(before);

    expect(await unary(admin, "echo", { text: "x" }, bearer(ADMIN_TOKEN))).toEqual({ text: "x" });
    expect(await stream(["a", "b"], bearer(ADMIN_TOKEN))).toEqual({ text: "a+b" });
    // A service that authenticates its own callers is not asked for the admin token.
    expect(await unary(open, "echo", { text: "y" })).toEqual({ text: "y" });
  });

  it("maps thrown errors to statuses: a ServiceError keeps its code and message, anything else is INTERNAL", async () => {
    await expect(unary(admin, "echo", { text: "refuse" }, bearer(ADMIN_TOKEN))).rejects.toMatchObject({
      code: GrpcStatus.NOT_FOUND,
      details: "text: nothing called refuse",
    });
    await expect(unary(admin, "fail", {}, bearer(ADMIN_TOKEN))).rejects.toMatchObject({
      code: GrpcStatus.INTERNAL,
      details: "internal error",
    });
    // The registration's mapError turns its own domain errors into ServiceErrors first.
    await expect(unary(admin, "fail", { text: "domain" }, bearer(ADMIN_TOKEN))).rejects.toMatchObject({
      code: GrpcStatus.ABORTED,
      details: "text: a domain error",
    });
  });

  it("refuses an undecodable unary request with INVALID_ARGUMENT naming the method", async () => {
    const raw = new (makeGenericClientConstructor(
      { echo: { ...adminDefinition.echo, requestSerialize: () => Buffer.from("{not json") } },
      "AdminService",
    ))(`127.0.0.1:${server.port}`, credentials.createInsecure()) as typeof admin;
    try {
      const refused = unary(raw, "echo", {}, bearer(ADMIN_TOKEN));
      await expect(refused).rejects.toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT });
      await expect(refused).rejects.toThrow("request: not a valid /test.v1.AdminService/Echo request message");
    } finally {
      raw.close();
    }
  });

  it("counts and times every call of services with metrics, by service, method and status code", async () => {
    const text = await registry.metrics();
    const handled = (method: string, code: string) =>
      Number(
        new RegExp(`^${GRPC_HANDLED_METRIC}\\{service="test.v1.AdminService",method="${method}",code="${code}"\\} (\\d+)$`, "m").exec(
          text,
        )?.[1] ?? 0,
      );
    expect(handled("Echo", "UNAUTHENTICATED")).toBe(2);
    expect(handled("Join", "UNAUTHENTICATED")).toBe(1);
    expect(handled("Echo", "OK")).toBe(1);
    expect(handled("Join", "OK")).toBe(1);
    expect(handled("Echo", "NOT_FOUND")).toBe(1);
    expect(handled("Fail", "INTERNAL")).toBe(1);
    expect(handled("Fail", "ABORTED")).toBe(1);
    expect(handled("Echo", "INVALID_ARGUMENT")).toBe(1);
    expect(text).toMatch(new RegExp(`^${GRPC_HANDLING_SECONDS_METRIC}_count\\{service="test.v1.AdminService",method="Echo"\\} 5$`, "m"));
    // metrics: false, and health and reflection, are not counted.
    expect(text).not.toContain("OpenService");
    expect(text).not.toContain("grpc.health");
  });
});
