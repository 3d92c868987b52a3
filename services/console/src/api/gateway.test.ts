import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { gatewayMethods, streamingMethodNames } from "./grpc-gateway.js";
import { fieldProblems, httpStatusOf } from "./http-errors.js";

describe("the gRPC mapping", () => {
  it("covers every unary method of the allowed services, and no streaming or ingest method", () => {
    const names = [...gatewayMethods().keys()];
    expect(names).toContain("switchyard.v1.ConfigService/CreateSource");
    expect(names).toContain("switchyard.v1.DeliveryService/ReplayDeadLetters");
    expect(names).toContain("switchyard.v1.AudienceService/ListAudiences");
    expect(names).toContain("switchyard.v1.DeletionService/RequestDeletion");
    expect(names).toContain("switchyard.v1.InsightsService/GetSourceSchema");
    expect(names.some((name) => name.startsWith("switchyard.v1.IngestService/"))).toBe(false);
    expect(names).not.toContain("switchyard.v1.AudienceService/SyncAudienceSnapshot");
    expect([...streamingMethodNames()].sort()).toEqual([
      "switchyard.v1.AudienceService/SyncAudienceSnapshot",
      "switchyard.v1.AudienceService/SyncTraitSnapshot",
    ]);
    const upstreams = Object.fromEntries([...gatewayMethods().values()].map((m) => [m.name.split("/")[0], m.upstream]));
    expect(upstreams).toEqual({
      "switchyard.v1.ConfigService": "delivery",
      "switchyard.v1.DeliveryService": "delivery",
      "switchyard.v1.AudienceService": "audience",
      "switchyard.v1.DeletionService": "audience",
      "switchyard.v1.InsightsService": "insights",
    });
  });

  it("maps gRPC statuses onto HTTP; the console's own refused token is a 502, not the browser's 401", () => {
    expect(httpStatusOf(status.INVALID_ARGUMENT)).toBe(400);
    expect(httpStatusOf(status.NOT_FOUND)).toBe(404);
    expect(httpStatusOf(status.ALREADY_EXISTS)).toBe(409);
    expect(httpStatusOf(status.RESOURCE_EXHAUSTED)).toBe(429);
    expect(httpStatusOf(status.UNAVAILABLE)).toBe(503);
    expect(httpStatusOf(status.DEADLINE_EXCEEDED)).toBe(504);
    expect(httpStatusOf(status.UNAUTHENTICATED)).toBe(502);
    expect(httpStatusOf(status.INTERNAL)).toBe(500);
  });

  it("reads the fields an error names, as the services word them", () => {
    expect(fieldProblems("id: must be 1-64 letters, digits, '-' or '_'")).toEqual([
      { field: "id", message: "must be 1-64 letters, digits, '-' or '_'" },
    ]);
    expect(
      fieldProblems(
        "destination.settings.webhooks.0.url: must be an absolute http or https URL; destination.settings.webhooks.1.headers.X-Key: too long",
      ),
    ).toEqual([
      { field: "destination.settings.webhooks.0.url", message: "must be an absolute http or https URL" },
      { field: "destination.settings.webhooks.1.headers.X-Key", message: "too long" },
    ]);
    expect(fieldProblems('header.source_id: unknown source "x"')).toEqual([{ field: "header.source_id", message: 'unknown source "x"' }]);
    expect(fieldProblems("user_ids[3]: must not be empty")).toEqual([{ field: "user_ids[3]", message: "must not be empty" }]);
    expect(fieldProblems("the destination is failing")).toEqual([]);
  });
});
