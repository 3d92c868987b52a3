import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAudienceSyncConfig, startAudienceSync, type AudienceSyncHandle } from "@switchyard/audience-sync";
import { busNames, type BusNames } from "@switchyard/bus";
import { loadDeliveryConfig, startDelivery, type DeliveryHandle } from "@switchyard/delivery";
import type { IngestHandle } from "@switchyard/ingest";
import { loadInsightsConfig, startInsights, type InsightsHandle } from "@switchyard/insights";
import { createLogger } from "@switchyard/platform";
import { freePort, LOOPBACK_CIDRS, NatsServer, uniqueNamespace, writeWorkspaceFile, type WorkspaceFile } from "@switchyard/testkit";
import { startIngestInProcess } from "../../ingest/test/ingest-fixture.js";
// @ts-expect-error: plain JavaScript build script, no declarations.
import { buildConsoleWeb } from "../scripts/build-web.mjs";
import { loadConsoleConfig, startConsole, type ConsoleHandle } from "../src/index.js";

export const ADMIN_TOKEN = "console-test-admin-token-0123456789";

/**
 * The suite as the console sees it, every part real and in this process: a nats-server,
 * ingest, delivery (ConfigService, DeliveryService), audience-sync (AudienceService) and the
 * console with its web app built into a temporary folder. Insights (InsightsService) runs only
 * when asked for (`insights: true`); otherwise nothing listens at its address, so InsightsService
 * answers UNAVAILABLE.
 */
export interface ConsoleFixture {
  nats: NatsServer;
  names: BusNames;
  ingest: IngestHandle;
  delivery: DeliveryHandle;
  audienceSync: AudienceSyncHandle;
  /** Set when started with `insights: true`. */
  insights: InsightsHandle | undefined;
  console: ConsoleHandle;
  /** The console's base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  /** Ingest's Segment HTTP API. */
  ingestHttpUrl: string;
  /** Every line the console logged (at debug level). */
  consoleLog(): string;
  dispose(): Promise<void>;
}

export async function startConsoleFixture(
  options: { workspace?: unknown; deliveryEnv?: Record<string, string>; consoleEnv?: Record<string, string>; insights?: boolean } = {},
): Promise<ConsoleFixture> {
  const nats = await NatsServer.start();
  const namespace = uniqueNamespace();
  const names = busNames(namespace);
  const webDir = await mkdtemp(join(tmpdir(), "switchyard-console-web-"));
  await buildConsoleWeb({ outdir: webDir });
  let workspaceFile: WorkspaceFile | undefined;
  if (options.workspace) workspaceFile = await writeWorkspaceFile(options.workspace);
  const common = {
    NATS_URL: nats.url,
    SWITCHYARD_NAMESPACE: namespace,
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    ...(workspaceFile ? { SWITCHYARD_WORKSPACE_FILE: workspaceFile.path } : {}),
  };
  const silent = createLogger({ service: "test", level: "silent" });
  const { ingest } = await startIngestInProcess({
    natsUrl: nats.url,
    namespace,
    ...(workspaceFile ? { workspaceFile: workspaceFile.path } : {}),
  });
  const delivery = await startDelivery(
    loadDeliveryConfig({
      ...common,
      DELIVERY_GRPC_PORT: "0",
      DELIVERY_OPS_PORT: "0",
      DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
      ...options.deliveryEnv,
    }),
    silent,
  );
  const audienceSync = await startAudienceSync(
    loadAudienceSyncConfig({ ...common, AUDIENCE_GRPC_PORT: "0", AUDIENCE_OPS_PORT: "0" }),
    silent,
  );
  const insights = options.insights
    ? await startInsights(
        // Counts written every 100 ms, so a page shows a call soon after it is sent.
        loadInsightsConfig({ ...common, INSIGHTS_GRPC_PORT: "0", INSIGHTS_OPS_PORT: "0", INSIGHTS_FLUSH_INTERVAL_MS: "100" }),
        silent,
      )
    : undefined;

  let logged = "";
  const consoleLogger = createLogger({
    service: "console",
    level: "debug",
    destination: { write: (line: string) => void (logged += line) },
  });
  const consoleHandle = await startConsole(
    loadConsoleConfig({
      ...common,
      CONSOLE_HTTP_PORT: "0",
      CONSOLE_OPS_PORT: "0",
      CONSOLE_DELIVERY_ADDRESS: `127.0.0.1:${delivery.grpcPort}`,
      CONSOLE_AUDIENCE_ADDRESS: `127.0.0.1:${audienceSync.grpcPort}`,
      // Without insights, a port nothing listens on.
      CONSOLE_INSIGHTS_ADDRESS: `127.0.0.1:${insights ? insights.grpcPort : await freePort()}`,
      CONSOLE_WEB_DIR: webDir,
      ...options.consoleEnv,
    }),
    consoleLogger,
  );

  return {
    nats,
    names,
    ingest,
    delivery,
    audienceSync,
    insights,
    console: consoleHandle,
    url: `http://127.0.0.1:${consoleHandle.httpPort}`,
    ingestHttpUrl: `http://127.0.0.1:${ingest.httpPort}`,
    consoleLog: () => logged,
    dispose: async () => {
      await consoleHandle.stop().catch(() => {});
      await insights?.stop().catch(() => {});
      await audienceSync.stop().catch(() => {});
      await delivery.stop().catch(() => {});
      await ingest.stop().catch(() => {});
      await nats.dispose();
      await rm(webDir, { recursive: true, force: true });
      await workspaceFile?.remove();
    },
  };
}
