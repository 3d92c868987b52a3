import { status } from "@grpc/grpc-js";
import { kvKeys } from "@switchyard/workspace";
import { waitFor } from "@switchyard/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configService, grpcFailure as failure, startDeliveryFixture, type DeliveryFixture } from "@switchyard/testkit/fixtures/delivery";

/** ConfigService.SetAllowedOrigins: the browser origins a source's write keys may be used from. */

let fixture: DeliveryFixture;

beforeEach(async () => {
  fixture = await startDeliveryFixture({ workspace: {} });
});
afterEach(async () => {
  await fixture.dispose();
});

const api = configService(() => fixture.admin);

/** analytics.js's request: text/plain, the key in the body, from `origin`. Resolves to the status. */
async function browserTrack(ingestUrl: string, writeKey: string, origin: string): Promise<number> {
  const response = await fetch(`${ingestUrl}/v1/t`, {
    method: "POST",
    headers: { "content-type": "text/plain", origin },
    body: JSON.stringify({ anonymousId: "a1", event: "Viewed", writeKey }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("SetAllowedOrigins", () => {
  it("narrows a source to listed origins, ingest follows within moments, and unset opens it again", async () => {
    const ingestUrl = await fixture.startIngest();
    const { writeKey, source } = await api.createSource({ id: "shop" });
    expect(source?.allowedOrigins).toBeUndefined();
    await waitFor("the new source to work", async () => (await browserTrack(ingestUrl, writeKey, "https://evil.example")) === 200);

    const set = await api.setAllowedOrigins({ sourceId: "shop", allowedOrigins: { origins: ["https://shop.example"] } });
    expect(set.source).toMatchObject({ id: "shop", allowedOrigins: { origins: ["https://shop.example"] } });
    expect((await api.getSource({ id: "shop" })).source?.allowedOrigins).toEqual({ origins: ["https://shop.example"] });
    const stored = (await fixture.configKv.get(kvKeys.source("shop")))?.json<Record<string, unknown>>();
    expect(stored?.allowedOrigins).toEqual(["https://shop.example"]);
    await waitFor("ingest to refuse other origins", async () => (await browserTrack(ingestUrl, writeKey, "https://evil.example")) === 403);
    expect(await browserTrack(ingestUrl, writeKey, "https://shop.example")).toBe(200);

    // A rotation keeps the setting.
    const rotated = await api.rotateWriteKey({ sourceId: "shop", graceSeconds: 0 });
    expect(rotated.source?.allowedOrigins).toEqual({ origins: ["https://shop.example"] });

    const cleared = await api.setAllowedOrigins({ sourceId: "shop" });
    expect(cleared.source?.allowedOrigins).toBeUndefined();
    await waitFor(
      "ingest to take any origin again",
      async () => (await browserTrack(ingestUrl, rotated.writeKey, "https://evil.example")) === 200,
    );
  });

  it("refuses what is not an origin, naming the entry, and an unknown source", async () => {
    await api.createSource({ id: "shop" });
    const refused = await failure(
      api.setAllowedOrigins({ sourceId: "shop", allowedOrigins: { origins: ["https://shop.example", "https://shop.example/path", "*"] } }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details.split("; ")).toEqual([
      expect.stringMatching(/^allowed_origins\.origins\.1: must be a web origin/),
      expect.stringMatching(/^allowed_origins\.origins\.2: must be a web origin/),
    ]);
    expect((await api.getSource({ id: "shop" })).source?.allowedOrigins).toBeUndefined();
    expect((await failure(api.setAllowedOrigins({ sourceId: "nope" }))).code).toBe(status.NOT_FOUND);
  });
});
