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

// A Destination holds its kind in the `kind` oneof; clients from before it know only the
// `webhooks` field (4), workspace files only `settings.webhooks`, and stored records may lack `type`.

let fixture: DeliveryFixture;
let receiver: WebhookReceiver;

beforeEach(async () => {
  receiver = await WebhookReceiver.start();
  // The file's destination has the form workspace files have always had: `settings.webhooks`, no type.
  fixture = await startDeliveryFixture({ workspace: webSourceTo("wk_kinds_test_01", { hook: receiver.url("/file") }) });
});
afterEach(async () => {
  await fixture.dispose();
  await receiver.close();
});

const api = configService(() => fixture.admin);

function destination(overrides: Partial<configApi.Destination>): configApi.Destination {
  return configApi.Destination.fromPartial({ id: "hook", enabled: true, ...overrides });
}

async function delivered(path: string, messageId: string): Promise<void> {
  await fixture.publishCalls("web", [busCall(messageId, trackPayload())]);
  await waitFor(`${messageId} at ${path}`, () => receiver.requests.some((r) => r.path === path && r.json.messageId === messageId));
}

describe("a Destination's kind", () => {
  it("is read as the Webhooks kind for a destination from the workspace file, with the older webhooks field beside it", async () => {
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const urls = [{ url: receiver.url("/file"), headers: {} }];
    expect(read.kind).toEqual({ $case: "webhooksKind", value: { webhooks: urls } });
    expect(read.webhooks).toEqual(urls);
    await delivered("/file", "m-file");
  });

  it("takes a destination given by its kind alone, and delivers to it", async () => {
    const webhooks = [{ url: receiver.url("/kind"), headers: { "X-Team": "growth" } }];
    const put = (await api.putDestination({ destination: destination({ kind: { $case: "webhooksKind", value: { webhooks } } }) }))
      .destination!;
    // Header values read as fingerprints, in both fields alike.
    const shown = [{ url: receiver.url("/kind"), headers: { "X-Team": expect.stringMatching(/^\[set:hmac:[0-9a-f]{8}\]$/) } }];
    expect(put.kind).toEqual({ $case: "webhooksKind", value: { webhooks: shown } });
    expect(put.webhooks).toEqual(shown);
    await delivered("/kind", "m-kind");
    expect(receiver.requests.find((r) => r.json.messageId === "m-kind")!.headers["x-team"]).toBe("growth");
  });

  it("takes a destination from a client that knows only the webhooks field, and reads it back with its kind", async () => {
    const webhooks = [{ url: receiver.url("/old-client"), headers: {} }];
    // Encoded as such a client sends it: field 4 and no field 8.
    const bytes = configApi.Destination.encode(destination({ webhooks })).finish();
    expect(configApi.Destination.decode(bytes).kind).toBeUndefined();
    const put = (await api.putDestination({ destination: configApi.Destination.decode(bytes) })).destination!;
    expect(put.kind).toEqual({ $case: "webhooksKind", value: { webhooks } });
    await delivered("/old-client", "m-old-client");
  });

  it("takes back what a read returned with either field changed, and refuses both changed differently, naming them", async () => {
    const read = (await api.getDestination({ id: "hook" })).destination!;
    const renamed = (await api.putDestination({ destination: { ...read, name: "Renamed" } })).destination!;
    expect(renamed.name).toBe("Renamed");
    expect(renamed.webhooks).toEqual(read.webhooks);

    // A client that does not know `kind` changes the older field and sends the kind back as it read it.
    const older = { ...read, webhooks: [{ url: receiver.url("/older"), headers: {} }] };
    expect((await api.putDestination({ destination: older })).destination!.webhooks).toEqual(older.webhooks);
    await delivered("/older", "m-older");

    // A client that knows `kind` changes it and sends the older field back as it read it.
    const reread = (await api.getDestination({ id: "hook" })).destination!;
    const newer = {
      ...reread,
      kind: { $case: "webhooksKind" as const, value: { webhooks: [{ url: receiver.url("/newer"), headers: {} }] } },
    };
    expect((await api.putDestination({ destination: newer })).destination!.webhooks).toEqual(newer.kind.value.webhooks);
    await delivered("/newer", "m-newer");

    const both = {
      ...newer,
      webhooks: [{ url: receiver.url("/one"), headers: {} }],
      kind: { $case: "webhooksKind" as const, value: { webhooks: [{ url: receiver.url("/other"), headers: {} }] } },
    };
    const refused = await failure(api.putDestination({ destination: both }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toBe(
      "destination.webhooks: differs from destination.webhooks_kind.webhooks, and both differ from what is stored; give the URLs in one of them (webhooks is the older form)",
    );
    // Nothing of the refused write was stored.
    expect((await api.getDestination({ id: "hook" })).destination!.webhooks).toEqual(newer.kind.value.webhooks);
  });

  it("is the Webhooks kind for a record stored by a build that wrote no type", async () => {
    const record = { id: "legacy", enabled: true, settings: { webhooks: [{ url: receiver.url("/legacy"), headers: {} }] } };
    await fixture.configKv.put(kvKeys.destination("legacy"), JSON.stringify(record));
    const read = (await api.getDestination({ id: "legacy" })).destination!;
    expect(read.kind).toEqual({ $case: "webhooksKind", value: { webhooks: record.settings.webhooks } });
  });
});
