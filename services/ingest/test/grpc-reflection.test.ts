import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createFileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { descriptorSetBase64 } from "@switchyard/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

// Server reflection checked by independent descriptor pools: the buf CLI (Go protobuf, as
// grpcurl uses) and protobuf-es's registry, which both refuse files with missing imports.
const execFileAsync = promisify(execFile);
const require = createRequire(import.meta.url);
const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
const bufBin = join(repoRoot, "node_modules/.bin/buf");
const reflectionProto = join(dirname(require.resolve("@grpc/reflection/package.json")), "build/proto/grpc/reflection/v1/reflection.proto");
const README_AUTH = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;

let fixture: IngestFixture;
beforeAll(async () => {
  fixture = await startIngestFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

async function bufCurl(args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(bufBin, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], {
    timeout: 30_000,
  });
  return stdout;
}

// Dynamic clients from proto-loader have no static method types.
function reflectionClient(): any {
  const loaded = loadPackageDefinition(protoLoader.loadSync(reflectionProto, { keepCase: true })) as GrpcObject;
  const Service = ["grpc", "reflection", "v1", "ServerReflection"].reduce<unknown>(
    (node, key) => (node as GrpcObject)[key],
    loaded,
  ) as ServiceClientConstructor;
  return new Service(`127.0.0.1:${fixture.ingest.grpcPort}`, credentials.createInsecure());
}

function reflect(request: object): Promise<Record<string, any>> {
  const client = reflectionClient();
  return new Promise<Record<string, any>>((resolve, reject) => {
    const stream = client.ServerReflectionInfo();
    stream.on("data", (response: Record<string, any>) => {
      resolve(response);
      stream.end();
    });
    stream.on("error", reject);
    stream.write(request);
  }).finally(() => client.close());
}

async function filesFor(request: object): Promise<Buffer[]> {
  const response = await reflect(request);
  if (response.error_response) throw new Error(`reflection error: ${JSON.stringify(response.error_response)}`);
  return response.file_descriptor_response.file_descriptor_proto as Buffer[];
}

describe("gRPC server reflection", () => {
  it("buf curl lists only the services this port serves", async () => {
    const out = await bufCurl(["--list-services", `http://127.0.0.1:${fixture.ingest.grpcPort}`]);
    const services = out.trim().split("\n").sort();
    expect(services).toContain("switchyard.v1.IngestService");
    expect(services).toContain("grpc.health.v1.Health");
    expect(services).not.toContain("switchyard.v1.ConfigService");
    expect(services).not.toContain("switchyard.v1.DeliveryService");
    // Health resolves through reflection too (buf loads every listed service's file).
    const health = await bufCurl(["-d", "{}", `http://127.0.0.1:${fixture.ingest.grpcPort}/grpc.health.v1.Health/Check`]);
    expect(JSON.parse(health)).toEqual({ status: "SERVING" });
  });

  it("buf curl lists IngestService's methods and invokes IngestBatch with the README body", async () => {
    const base = `http://127.0.0.1:${fixture.ingest.grpcPort}`;
    const methods = await bufCurl(["--list-methods", base]);
    expect(methods).toContain("switchyard.v1.IngestService/IngestBatch");
    // The README's grpcurl body, as written there.
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const body = /-d '([^']*)' \\\n\s*127\.0\.0\.1:50051 switchyard\.v1\.IngestService\/IngestBatch/.exec(readme)?.[1];
    expect(body, "README's grpcurl IngestBatch example").toBeDefined();
    const out = await bufCurl(["-H", `authorization: ${README_AUTH}`, "-d", body!, `${base}/switchyard.v1.IngestService/IngestBatch`]);
    expect(JSON.parse(out)).toMatchObject({ accepted: 2 });
  });

  it("serves each file under its own name with its imports, loadable into protobuf-es's registry", async () => {
    const files = await filesFor({ file_containing_symbol: "switchyard.v1.IngestService" });
    const protos = files.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
    const names = protos.map((file) => file.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "switchyard/v1/ingest.proto",
        "switchyard/v1/calls.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
      ]),
    );
    expect(protos.find((file) => file.name === "switchyard/v1/ingest.proto")?.dependency).toEqual(["switchyard/v1/calls.proto"]);

    // createFileRegistry resolves every import by name and throws on a missing one.
    const byName = new Map(protos.map((file) => [file.name, file]));
    const registry = createFileRegistry(byName.get("switchyard/v1/ingest.proto")!, (name) => byName.get(name));
    const service = registry.getService("switchyard.v1.IngestService");
    expect(service?.methods.map((method) => method.name)).toContain("IngestBatch");
    const batch = service?.methods.find((method) => method.name === "IngestBatch");
    expect(batch?.input.typeName).toBe("switchyard.v1.IngestBatchRequest");
    expect(batch?.input.fields.map((field) => field.name)).toEqual(expect.arrayContaining(["batch_id", "calls"]));
    // The same content buf compiled into the embedded set: nothing merged, dropped or renamed
    // (only buf's own image extension, an unknown field elsewhere, is left out).
    const compiled = fromBinary(FileDescriptorSetSchema, Buffer.from(descriptorSetBase64, "base64")).file;
    for (const file of protos) {
      const original = compiled.find((candidate) => candidate.name === file.name)!;
      const known = { writeUnknownFields: false };
      expect(toBinary(FileDescriptorProtoSchema, file, known)).toEqual(toBinary(FileDescriptorProtoSchema, original, known));
    }
  });

  it("finds a file by its name", async () => {
    const files = await filesFor({ file_by_filename: "switchyard/v1/calls.proto" });
    const names = files.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
    expect(names[0]).toBe("switchyard/v1/calls.proto");
    expect(names).toEqual(expect.arrayContaining(["google/protobuf/struct.proto", "google/protobuf/timestamp.proto"]));
  });
});
