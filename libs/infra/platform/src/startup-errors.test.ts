import { describe, expect, it } from "vitest";
import { startupErrorLine } from "./startup-errors.js";

describe("startupErrorLine", () => {
  it("names the port and the variable that moves it", () => {
    const error = Object.assign(new Error("listen EADDRINUSE: address already in use 0.0.0.0:9101"), { code: "EADDRINUSE", port: 9101 });
    expect(startupErrorLine("ingest", error, { INGEST_GRPC_PORT: 50051, INGEST_OPS_PORT: 9101 })).toBe(
      "ingest: cannot listen on 0.0.0.0:9101: the port is in use (another `npm start` or ingest running?); set INGEST_OPS_PORT to another port",
    );
  });

  it("reads the port from grpc-js's wrapped message", () => {
    const error = new Error("No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:50052]");
    expect(startupErrorLine("delivery", error, { DELIVERY_GRPC_PORT: 50052 })).toContain("127.0.0.1:50052");
    expect(startupErrorLine("delivery", error, { DELIVERY_GRPC_PORT: 50052 })).toContain("set DELIVERY_GRPC_PORT");
  });

  it("says JetStream is missing, without the credentials of NATS_URL", () => {
    const error = Object.assign(new Error("jetstream is not enabled"), { name: "JetStreamNotEnabled" });
    const line = startupErrorLine("delivery", new Error("wrapped", { cause: error }), {
      NATS_URL: ["nats://admin:s3cret@nats.local:4222"],
    });
    expect(line).toContain("nats://nats.local:4222 has JetStream disabled");
    expect(line).toContain("nats-server -js");
    expect(line).not.toContain("s3cret");
  });

  it("leaves other errors (bugs) to be printed with their stack", () => {
    expect(startupErrorLine("ingest", new TypeError("x is undefined"), {})).toBeUndefined();
  });
});
