import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, Metadata, status } from "@grpc/grpc-js";
import { configApi, IngestServiceClient } from "@switchyard/contracts";
import { basicAuthorization } from "@switchyard/workspace";
import {
  freePort,
  leakedSecrets,
  LOOPBACK_CIDRS,
  NatsServer,
  ServiceProcess,
  signedUpCall,
  uniqueNamespace,
  waitFor,
  WebhookReceiver,
} from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * A full run of ingest and delivery as real processes, logging at trace
 * level, exercising every place a credential passes through: write keys
 * (right, wrong, rotated, created), the admin token (right and wrong), shared
 * and Standard Webhooks signing secrets, and destination headers and URLs that
 * carry tokens, through deliveries, retries, refusals and dead letters. Then
 * no credential may appear in any log line, in any form.
 */

const WRITE_KEY = "wk_logscan_source_key_000000001";
const WRONG_WRITE_KEY = "wk_logscan_wrong_key_000000002";
const ADMIN_TOKEN = "logscan-admin-token-000000000003";
const WRONG_ADMIN_TOKEN = "logscan-wrong-admin-token-0000004";
const SHARED_SECRET = "logscan-shared-secret-0000000005";
const SIGNING_SECRET = `whsec_${Buffer.from("logscan-signing-secret-000000006").toString("base64")}`;
const DESTINATION_BEARER = "logscan-destination-bearer-00007";
const DESTINATION_API_KEY = "logscan-destination-api-key-0008";
const URL_TOKEN = "logscan-url-query-token-000000009";
const API_SHARED_SECRET = "logscan-api-shared-secret-0000010";

let nats: NatsServer | undefined;
let dir: string | undefined;
const processes: ServiceProcess[] = [];
const receivers: WebhookReceiver[] = [];

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.dispose()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function metadataWith(authorization: string): Metadata {
  const metadata = new Metadata();
  metadata.set("authorization", authorization);
  return metadata;
}

/** A unary call on a generated client: resolves with the response, or the error's status code. */
function unary<Response>(
  invoke: (callback: (error: { code: number } | null, response: Response) => void) => void,
): Promise<Response | number> {
  return new Promise((resolve) => invoke((error, response) => resolve(error ? error.code : response)));
}

describe("logs of a full run", () => {
  it("never contain write keys, admin tokens, secrets or authorization values", async () => {
    nats = await NatsServer.start();
    dir = await mkdtemp(join(tmpdir(), "switchyard-logscan-"));
    const hook = await WebhookReceiver.start();
    receivers.push(hook);
    // The first answer fails, so the run also goes through a retry.
    hook.respond((_request, index) => (index === 0 ? { status: 500 } : { status: 200 }));
    const refusing = await WebhookReceiver.start();
    receivers.push(refusing);
    refusing.respond(() => ({ status: 401, body: "no" }));

    const destinationHeaders = { Authorization: `Bearer ${DESTINATION_BEARER}`, "X-Api-Key": DESTINATION_API_KEY };
    const workspaceFile = join(dir, "workspace.json");
    await writeFile(
      workspaceFile,
      JSON.stringify({
        sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
        destinations: [
          {
            id: "hook",
            settings: {
              webhooks: [{ url: hook.url(`/hook?token=${URL_TOKEN}`), headers: destinationHeaders }],
              sharedSecret: SHARED_SECRET,
              standardWebhooks: { signingSecret: SIGNING_SECRET },
            },
          },
          // Answers 401: a permanent failure, dead-lettered.
          { id: "refusing", settings: { webhooks: [{ url: refusing.url(`/r?token=${URL_TOKEN}`), headers: destinationHeaders }] } },
          // Cloud metadata address: refused by the address policy before any connection.
          {
            id: "metadata",
            settings: { webhooks: [{ url: `http://169.254.169.254/latest?token=${URL_TOKEN}`, headers: destinationHeaders }] },
          },
        ],
        connections: [
          { sourceId: "web", destinationId: "hook" },
          { sourceId: "web", destinationId: "refusing" },
          { sourceId: "web", destinationId: "metadata" },
        ],
      }),
    );
    const common = {
      NATS_URL: nats.url,
      SWITCHYARD_NAMESPACE: uniqueNamespace(),
      SWITCHYARD_WORKSPACE_FILE: workspaceFile,
      HOST: "127.0.0.1",
      LOG_LEVEL: "trace",
      SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
      // Free ops ports: never the defaults another run may hold.
      INGEST_OPS_PORT: "0",
      DELIVERY_OPS_PORT: "0",
    };
    const deliveryPort = await freePort();
    const delivery = ServiceProcess.start("delivery", {
      ...common,
      DELIVERY_GRPC_PORT: String(deliveryPort),
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
      DELIVERY_RETRY_BASE_DELAY_MS: "100",
      DELIVERY_RETRY_MAX_DELAY_MS: "500",
    });
    processes.push(delivery);
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const ingest = ServiceProcess.start("ingest", { ...common, INGEST_GRPC_PORT: String(grpcPort), INGEST_HTTP_PORT: String(httpPort) });
    processes.push(ingest);
    // Two services compiling their TypeScript at once on a busy machine: give them time.
    await Promise.all([delivery.waitForOutput(/delivery ready/, 60_000), ingest.waitForOutput(/ingest ready/, 60_000)]);

    const ingestGrpc = new IngestServiceClient(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
    const config = new configApi.ConfigServiceClient(`127.0.0.1:${deliveryPort}`, credentials.createInsecure());
    const httpTrack = (writeKey: string, messageId: string) =>
      fetch(`http://127.0.0.1:${httpPort}/v1/track`, {
        method: "POST",
        headers: { authorization: basicAuthorization(writeKey), "content-type": "application/json" },
        body: JSON.stringify({ userId: "user-1", event: "Signed Up", messageId }),
      }).then((response) => response.status);
    const grpcTrack = (writeKey: string, messageId: string) =>
      unary((callback) => ingestGrpc.ingestCall({ call: signedUpCall(messageId) }, metadataWith(basicAuthorization(writeKey)), callback));
    const admin = metadataWith(`Bearer ${ADMIN_TOKEN}`);

    try {
      expect(await httpTrack(WRITE_KEY, "m-http")).toBe(200);
      expect(await grpcTrack(WRITE_KEY, "m-grpc")).toMatchObject({ messageId: "m-grpc" });
      expect(await httpTrack(WRONG_WRITE_KEY, "m-wrong-http")).toBe(401);
      expect(await grpcTrack(WRONG_WRITE_KEY, "m-wrong-grpc")).toBe(status.UNAUTHENTICATED);
      expect(await unary((callback) => config.listSources({}, metadataWith(`Bearer ${WRONG_ADMIN_TOKEN}`), callback))).toBe(
        status.UNAUTHENTICATED,
      );

      // Keys made and rotated through the API, a secret set through it.
      const created = await unary<configApi.CreateSourceResponse>((callback) =>
        config.createSource({ id: "app", name: "" }, admin, callback),
      );
      if (typeof created === "number") throw new Error(`CreateSource failed: ${created}`);
      const rotated = await unary<configApi.RotateWriteKeyResponse>((callback) =>
        config.rotateWriteKey({ sourceId: "web", writeKey: "", graceSeconds: 600 }, admin, callback),
      );
      if (typeof rotated === "number") throw new Error(`RotateWriteKey failed: ${rotated}`);
      const stored = await unary((callback) =>
        config.putDestination(
          {
            destination: {
              id: "api-hook",
              name: "",
              enabled: true,
              webhooks: [{ url: hook.url(`/api?token=${URL_TOKEN}`), headers: destinationHeaders }],
              sharedSecret: API_SHARED_SECRET,
              standardWebhooks: undefined,
              maxRequestsPerSecond: 0,
              kind: undefined,
            },
          },
          admin,
          callback,
        ),
      );
      expect(typeof stored).not.toBe("number");
      await waitFor("the rotated key to work", async () => (await httpTrack(rotated.writeKey, `m-rotated-${Date.now()}`)) === 200);
      expect(await grpcTrack(created.writeKey, "m-created")).toMatchObject({ messageId: "m-created" });

      // Every call of "web" reaches the hook (the first after a retry); the others fail and are dead-lettered.
      await waitFor("the deliveries", () => hook.byMessageId("m-http").length > 0 && hook.byMessageId("m-grpc").length > 0, {
        timeoutMs: 20_000,
      });
      await waitFor("the refused and metadata destinations' dead letters", () =>
        delivery.output.includes('"destinationId":"refusing"') && delivery.output.includes('"destinationId":"metadata"') ? true : undefined,
      );
      expect(hook.requests[0]!.headers.authorization).toBe(`Bearer ${DESTINATION_BEARER}`);
      expect(refusing.requests.length).toBeGreaterThan(0);

      const secrets = [
        WRITE_KEY,
        WRONG_WRITE_KEY,
        rotated.writeKey,
        created.writeKey,
        ADMIN_TOKEN,
        WRONG_ADMIN_TOKEN,
        SHARED_SECRET,
        SIGNING_SECRET,
        SIGNING_SECRET.slice("whsec_".length),
        DESTINATION_BEARER,
        DESTINATION_API_KEY,
        URL_TOKEN,
        API_SHARED_SECRET,
      ];
      for (const service of [ingest, delivery]) {
        service.signal("SIGTERM");
        await service.exited();
      }
      expect({ ingest: leakedSecrets(ingest.output, secrets), delivery: leakedSecrets(delivery.output, secrets) }).toEqual({
        ingest: [],
        delivery: [],
      });
      // The scan saw real logs: both services logged, ingest down to its per-request debug lines.
      expect(delivery.logLines().length).toBeGreaterThan(3);
      expect(ingest.logLines().some((line) => line.level === "debug" && line.msg === "HTTP request")).toBe(true);
    } finally {
      ingestGrpc.close();
      config.close();
    }
  });
});
