import { Metadata, Server, ServerCredentials, status, type ServerReadableStream, type ServerUnaryCall } from "@grpc/grpc-js";
import { audiencesApi, configApi } from "@switchyard/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GrpcCallError, GrpcJsonInvoker, JsonRequestError, SWITCHYARD_SERVICES, findJsonMethod, jsonMethods } from "../src/index.js";

/**
 * The by-name JSON invoker against a real gRPC server on loopback, serving the generated
 * ConfigService and AudienceService definitions with stand-in handlers.
 */

const TOKEN = "Bearer invoker-test-token";
let server: Server;
let address: string;
let handlerRuns = 0;
const seenAuthorization: unknown[] = [];

beforeAll(async () => {
  server = new Server();
  server.addService(configApi.ConfigServiceService, {
    getSource: (
      call: ServerUnaryCall<configApi.GetSourceRequest, configApi.GetSourceResponse>,
      done: (error: Partial<{ code: status; details: string }> | null, value?: configApi.GetSourceResponse) => void,
    ) => {
      handlerRuns++;
      seenAuthorization.push(call.metadata.get("authorization")[0]);
      if (call.request.id !== "web") return done({ code: status.NOT_FOUND, details: `id: no source "${call.request.id}"` });
      done(null, {
        source: {
          ...configApi.Source.fromPartial({ id: "web", name: "Web", writeKeyCount: 2 }),
          retiringWriteKeysExpireAt: new Date("2030-01-02T03:04:05.000Z"),
        },
      });
    },
  } as never);
  server.addService(audiencesApi.AudienceServiceService, {
    syncAudienceSnapshot: (
      call: ServerReadableStream<audiencesApi.SyncAudienceSnapshotRequest, audiencesApi.SyncAudienceSnapshotResponse>,
      done: (error: null, value: audiencesApi.SyncAudienceSnapshotResponse) => void,
    ) => {
      handlerRuns++;
      const users: string[] = [];
      let name = "";
      call.on("data", (request: audiencesApi.SyncAudienceSnapshotRequest) => {
        name ||= request.header?.name ?? "";
        users.push(...request.userIds);
      });
      call.on("end", () => done(null, { summary: { trait: name, total: users.length, emitted: users.length, alreadyApplied: false } }));
    },
  } as never);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  address = `127.0.0.1:${port}`;
});

afterAll(() => {
  server.forceShutdown();
});

function invoker(target?: (service: string) => { address: string; metadata: Metadata }) {
  return new GrpcJsonInvoker({
    timeoutMs: 5_000,
    target:
      target ??
      (() => {
        const metadata = new Metadata();
        metadata.set("authorization", TOKEN);
        return { address, metadata };
      }),
  });
}

describe("the JSON invoker", () => {
  it("knows every method of the generated service definitions, by any spelling of its name", () => {
    const methods = jsonMethods();
    expect(new Set([...methods.values()].map((method) => method.service))).toEqual(
      new Set(SWITCHYARD_SERVICES.map((service) => service.fullName)),
    );
    expect(methods.get("switchyard.v1.AudienceService/SyncAudienceSnapshot")).toMatchObject({ requestStream: true, responseStream: false });
    const calls = invoker();
    for (const name of [
      "switchyard.v1.ConfigService/GetSource",
      "ConfigService/GetSource",
      "configservice.getsource",
      "/ConfigService/GetSource",
    ])
      expect(calls.find(name)?.fullName, name).toBe("switchyard.v1.ConfigService/GetSource");
    expect(calls.find("ConfigService/DropEverything")).toBeUndefined();
    // The same lookup without an invoker, as a CLI checks a name before it has a connection.
    expect(findJsonMethod(methods, "deliveryservice.getdeliverystats")?.fullName).toBe("switchyard.v1.DeliveryService/GetDeliveryStats");
    calls.close();
  });

  it("calls a unary method with proto3 JSON (snake_case names too) and answers proto3 JSON, with the target's metadata", async () => {
    const calls = invoker();
    await expect(calls.call("ConfigService/GetSource", [{ id: "web" }])).resolves.toEqual({
      source: { id: "web", name: "Web", writeKeyCount: 2, retiringWriteKeysExpireAt: "2030-01-02T03:04:05.000Z" },
    });
    const method = calls.find("AudienceService/SyncAudienceSnapshot")!;
    await expect(
      calls.call(method, [{ header: { name: "High Value", sync_id: "s1" }, user_ids: ["u1", "u2"] }, { userIds: ["u3"] }]),
    ).resolves.toEqual({ summary: { trait: "High Value", total: 3, emitted: 3 } });
    expect(seenAuthorization.at(-1)).toBe(TOKEN);
    calls.close();
  });

  it("rejects with the service's status and words, naming the method", async () => {
    const calls = invoker();
    const error = await calls.call("ConfigService/GetSource", [{ id: "nope" }]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GrpcCallError);
    expect(error).toMatchObject({
      method: "switchyard.v1.ConfigService/GetSource",
      address,
      code: status.NOT_FOUND,
      codeName: "NOT_FOUND",
      details: 'id: no source "nope"',
      message: 'switchyard.v1.ConfigService/GetSource: NOT_FOUND: id: no source "nope"',
    });
    calls.close();
  });

  it("sends nothing when the JSON is not the request message, the count is wrong or the target refuses", async () => {
    const calls = invoker();
    const before = handlerRuns;
    const broken = await calls.call("AudienceService/SyncTraitIncrement", [{ setValues: [null] }]).catch((caught: unknown) => caught);
    expect(broken).toBeInstanceOf(JsonRequestError);
    expect((broken as JsonRequestError).reason).toMatch(/^not a SyncTraitIncrementRequest in proto3 JSON \(/);
    await expect(calls.call("ConfigService/GetSource", [{ id: "web" }, { id: "web" }])).rejects.toThrow(
      "switchyard.v1.ConfigService/GetSource: takes exactly one request message",
    );
    await expect(calls.call("ConfigService/DropEverything", [{}])).rejects.toBeInstanceOf(JsonRequestError);
    const refusing = invoker(() => {
      throw new Error("no credential for this service");
    });
    await expect(refusing.call("ConfigService/GetSource", [{ id: "web" }])).rejects.toThrow("no credential for this service");
    expect(handlerRuns).toBe(before);
    refusing.close();
    calls.close();
  });

  it("reports a service that is not there as UNAVAILABLE, with the address it tried", async () => {
    const unreachable = await new Promise<string>((resolve, reject) => {
      const probe = new Server();
      probe.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, port) => {
        if (error) return reject(error);
        probe.forceShutdown();
        resolve(`127.0.0.1:${port}`);
      });
    });
    const calls = invoker(() => ({ address: unreachable, metadata: new Metadata() }));
    const error = await calls.call("ConfigService/GetSource", [{ id: "web" }]).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: status.UNAVAILABLE, codeName: "UNAVAILABLE", address: unreachable });
    calls.close();
  });
});
