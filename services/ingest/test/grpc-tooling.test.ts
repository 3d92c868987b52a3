import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { IngestBatchRequest } from "@switchyard/contracts";
import { readCallBatches } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startIngestFixture, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

// What grpcurl does, done with grpc-js: server reflection, health, and the proto3 JSON mapping.
let fixture: IngestFixture;
beforeEach(async () => {
  fixture = await startIngestFixture();
});
afterEach(async () => {
  await fixture.dispose();
});

const require = createRequire(import.meta.url);
const reflectionProto = join(dirname(require.resolve("@grpc/reflection/package.json")), "build/proto/grpc/reflection/v1/reflection.proto");
const healthProto = require("grpc-health-check").protoPath as string;

// Dynamic clients from proto-loader have no static method types.
function clientFor(protoPath: string, servicePath: string[]): any {
  const loaded = loadPackageDefinition(protoLoader.loadSync(protoPath, { keepCase: true, defaults: true, enums: String })) as GrpcObject;
  const Service = servicePath.reduce<unknown>((node, key) => (node as GrpcObject)[key], loaded) as ServiceClientConstructor;
  return new Service(`127.0.0.1:${fixture.ingest.grpcPort}`, credentials.createInsecure());
}

function reflect(request: object): Promise<Record<string, any>> {
  const client = clientFor(reflectionProto, ["grpc", "reflection", "v1", "ServerReflection"]);
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo();
    stream.on("data", (response: Record<string, any>) => {
      resolve(response);
      stream.end();
    });
    stream.on("error", reject);
    stream.write(request);
  }).finally(() => client.close()) as Promise<Record<string, any>>;
}

describe("gRPC tooling support", () => {
  it("lists its services through server reflection", async () => {
    const response = await reflect({ list_services: "" });
    const names = (response.list_services_response.service as { name: string }[]).map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["switchyard.v1.IngestService", "grpc.health.v1.Health"]));
  });

  it("serves the file descriptors of a symbol, with their imports", async () => {
    const response = await reflect({ file_containing_symbol: "switchyard.v1.IngestService" });
    const files = response.file_descriptor_response.file_descriptor_proto as Buffer[];
    const text = files.map((file) => file.toString("latin1")).join("\n");
    expect(text).toContain("switchyard/v1/ingest.proto");
    expect(text).toContain("IngestBatch");
  });

  it("answers grpc.health.v1 checks", async () => {
    const client = clientFor(healthProto, ["grpc", "health", "v1", "Health"]);
    const check = (service: string) =>
      new Promise<string>((resolve, reject) =>
        client.Check({ service }, (error: Error | null, response: { status: string }) =>
          error ? reject(error) : resolve(response.status),
        ),
      );
    expect(await check("")).toBe("SERVING");
    expect(await check("switchyard.v1.IngestService")).toBe("SERVING");
    client.close();
  });

  it("accepts the README's grpcurl request body (proto3 JSON mapping)", async () => {
    const readmeBody = {
      batchId: "readme-example-1",
      calls: [
        { userId: "u1", track: { event: "Signed Up", properties: { plan: "pro" } } },
        { userId: "u1", timestamp: "2026-01-01T09:30:00Z", identify: { traits: { email: "u1@example.com" } } },
      ],
    };
    const response = await fixture.grpc.ingestBatch(IngestBatchRequest.fromJSON(readmeBody));
    expect(response.accepted).toBe(2);
    const calls = (await readCallBatches(fixture.nc, fixture.names)).flatMap((s) => s.batch.calls);
    expect(calls[0]?.payload).toEqual({ $case: "track", value: { event: "Signed Up", properties: { plan: "pro" } } });
    expect(calls[1]?.timestamp?.toISOString()).toBe("2026-01-01T09:30:00.000Z");
  });
});
