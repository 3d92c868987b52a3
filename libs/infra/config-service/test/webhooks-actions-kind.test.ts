import { status } from "@grpc/grpc-js";
import { configApi } from "@switchyard/contracts";
import { kvKeys } from "@switchyard/workspace";
import { waitFor, WebhookReceiver } from "@switchyard/testkit";
import {
  busCall,
  configService,
  grpcFailure as failure,
  startDeliveryFixture,
  trackPayload,
  webSourceTo,
  type DeliveryFixture,
} from "@switchyard/testkit/fixtures/delivery";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

// Destination.webhooks_actions_kind over real gRPC, the KV bucket and delivery: what PutDestination
// stores, what reads show (credentials as fingerprints), and what it refuses, naming the place.

let fixture: DeliveryFixture;
let receiver: WebhookReceiver;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  fixture = await startDeliveryFixture({ workspace: webSourceTo("wk_actions_kind_01", { hook: receiver.url("/file") }) });
});
afterEach(async () => {
  await fixture.dispose();
  await receiver.close();
});

const api = configService(() => fixture.admin);
const MASKED = expect.stringMatching(/^\[set:hmac:[0-9a-f]{8}\]$/);

function actions(mappings: Partial<configApi.ActionMapping>[], overrides: Partial<configApi.Destination> = {}): configApi.Destination {
  return configApi.Destination.fromPartial({
    id: "hook",
    enabled: true,
    kind: { $case: "webhooksActionsKind", value: { mappings: mappings.map((m) => configApi.ActionMapping.fromPartial(m)) } },
    ...overrides,
  });
}

const ORDERS: Partial<configApi.ActionMapping> = {
  name: "Orders",
  enabled: true,
  trigger: 'type = "track"',
  method: "PUT",
  headers: { Authorization: "Bearer s3cret", "X-Event": { "@path": "$.event" } },
  data: { event: { "@path": "$.event" } },
  batching: { enabled: false, size: 0, maxWaitMs: 0 },
};

describe("a Webhooks (Actions) destination through ConfigService", () => {
  it("is stored from its kind, read back with literal header values and URL query values masked, and delivered to", async () => {
    const url = `${receiver.url("/orders")}?token=abc123`;
    const put = (await api.putDestination({ destination: actions([{ ...ORDERS, url }], { sharedSecret: "k" }) })).destination!;
    expect(put.webhooks).toEqual([]);
    expect(put.sharedSecret).toBe("[set]");
    expect(put.kind?.$case).toBe("webhooksActionsKind");
    const [shown] = put.kind?.$case === "webhooksActionsKind" ? put.kind.value.mappings : [];
    expect({ ...shown, url: undefined }).toEqual({
      ...ORDERS,
      url: undefined,
      headers: { Authorization: MASKED, "X-Event": { "@path": "$.event" } },
    });
    expect(shown!.url).toMatch(new RegExp(`^${receiver.url("/orders").replaceAll(".", "\\.")}\\?token=\\[set:hmac:[0-9a-f]{8}\\]$`));
    // Stored as the workspace file writes it.
    const record = (await fixture.configKv.get(kvKeys.destination("hook")))!.json<Record<string, unknown>>();
    expect(record).toMatchObject({ type: "webhooks_actions", settings: { sharedSecret: "k", mappings: [{ name: "Orders", url }] } });

    await fixture.publishCalls("web", [busCall("m-1", trackPayload("Order Completed"))]);
    await waitFor("the mapped request", () => receiver.requests.length >= 1);
    const [request] = receiver.requests;
    expect([request!.method, request!.path, request!.headers.authorization, request!.raw.toString()]).toEqual([
      "PUT",
      "/orders?token=abc123",
      "Bearer s3cret",
      '{"event":"Order Completed"}',
    ]);
  });

  it("takes back what a read returned: masked values keep the stored ones, for the same mapping and receiver only", async () => {
    await api.putDestination({ destination: actions([{ ...ORDERS, url: receiver.url("/orders") }]) });
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const renamed = (await api.putDestination({ destination: { ...read, name: "Renamed" } })).destination!;
    expect(renamed.name).toBe("Renamed");
    const record = (await fixture.configKv.get(kvKeys.destination("hook")))!.json<{ settings: { mappings: { headers: object }[] } }>();
    expect(record.settings.mappings[0]!.headers).toEqual({ Authorization: "Bearer s3cret", "X-Event": { "@path": "$.event" } });

    // The same masked value sent to another host is refused, not given the stored credential.
    const [mapping] = read.kind?.$case === "webhooksActionsKind" ? read.kind.value.mappings : [];
    const moved = actions([{ ...mapping!, url: "https://elsewhere.example/orders" }]);
    const refused = await failure(api.putDestination({ destination: moved }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toMatch(/^destination\.settings\.mappings\.0\.headers\.Authorization: is a masked value/);
  });

  it("refuses invalid mappings, naming the mapping and the field of each problem", async () => {
    const refused = await failure(
      api.putDestination({
        destination: actions([
          { ...ORDERS, url: receiver.url("/a"), trigger: "type = track" },
          { ...ORDERS, name: "Second", url: { "@template": 5 }, headers: { "Content-Length": "1", "Bad Name": "x" } },
        ]),
      }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    const problems = refused.details.split("; ");
    expect(problems[0]).toMatch(/^destination\.settings\.mappings\.0\.trigger: /);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^destination\.settings\.mappings\.1\.url: /),
        "destination.settings.mappings.1.headers.Bad Name: is not an HTTP header name",
        "destination.settings.mappings.1.headers.Content-Length: framing headers cannot be set: Switchyard frames each request from the URL and body",
      ]),
    );
    const none = await failure(api.putDestination({ destination: actions([]) }));
    expect(none.details).toBe("destination.settings.mappings: give 1 to 20 mappings, not 0");
    const both = await failure(
      api.putDestination({
        destination: actions([{ ...ORDERS, url: receiver.url("/a") }], { webhooks: [{ url: receiver.url("/b"), headers: {} }] }),
      }),
    );
    expect(both.details).toBe("destination.webhooks: must be empty for a Webhooks (Actions) destination (its URLs are in its mappings)");
    // Nothing was stored: the file's Webhooks destination is still there.
    expect((await api.getDestination({ id: "hook" })).destination!.kind?.$case).toBe("webhooksKind");
  });
});
