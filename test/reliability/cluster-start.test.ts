import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { busNames } from "@switchyard/bus";
import { LOOPBACK_CIDRS, NatsCluster, ServiceProcess, uniqueNamespace, waitFor } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ADMIN_TOKEN = "cluster-start-admin-token-0123456789";
const WRITE_KEY = "wk_cluster_start_00000001";
const ZERO_PORTS = {
  INGEST_OPS_PORT: "0",
  INGEST_GRPC_PORT: "0",
  INGEST_HTTP_PORT: "0",
  DELIVERY_OPS_PORT: "0",
  DELIVERY_GRPC_PORT: "0",
  DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS,
  INSIGHTS_OPS_PORT: "0",
  INSIGHTS_GRPC_PORT: "0",
  AUDIENCE_OPS_PORT: "0",
  AUDIENCE_GRPC_PORT: "0",
};
/** Every service with two replicas but audience-sync: the set an operator scales out. */
const SEVEN = ["ingest", "ingest", "delivery", "delivery", "insights", "insights", "audience-sync"];
const READY_WITHIN_MS = 120_000;

let dir: string;
let workspaceFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cluster-start-"));
  workspaceFile = join(dir, "workspace.json");
  await writeFile(
    workspaceFile,
    JSON.stringify({
      sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: "http://127.0.0.1:9/hook" }] } }],
      connections: [{ sourceId: "web", destinationId: "hook" }],
    }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function serviceEnv(cluster: NatsCluster, namespace: string): Record<string, string> {
  return {
    NATS_URL: cluster.urls,
    SWITCHYARD_NAMESPACE: namespace,
    SWITCHYARD_WORKSPACE_FILE: workspaceFile,
    SWITCHYARD_STREAM_REPLICAS: "3",
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    ...ZERO_PORTS,
  };
}

async function readyz(process: ServiceProcess): Promise<{ status: number; body: { ready: boolean; reason?: string } }> {
  const line = process.logLines().find((entry) => typeof entry.opsPort === "number");
  const response = await fetch(`http://127.0.0.1:${line!.opsPort as number}/readyz`);
  return { status: response.status, body: (await response.json()) as { ready: boolean; reason?: string } };
}

describe("replicas started on a three-node cluster", () => {
  it("all become ready when seven start at the same moment on fresh stores, round after round", async () => {
    for (let round = 1; round <= 2; round++) {
      const cluster = await NatsCluster.start({ size: 3 });
      const env = serviceEnv(cluster, uniqueNamespace());
      const processes = SEVEN.map((service) => ({ service, process: ServiceProcess.start(service, env) }));
      try {
        const outcomes = await Promise.all(
          processes.map(({ service, process }) =>
            process.ready(service, READY_WITHIN_MS).then(
              () => `${service}: ready`,
              (error: Error) => `${service}: ${error.message.slice(0, 2_000)}`,
            ),
          ),
        );
        expect(outcomes, `round ${round}`).toEqual(SEVEN.map((service) => `${service}: ready`));
      } finally {
        await Promise.all(processes.map(({ process }) => process.dispose()));
        await cluster.dispose();
      }
    }
  }, 300_000);

  it("a replica started while one node is down waits, says for what, and is ready once the cluster can serve it", async () => {
    const cluster = await NatsCluster.start({ size: 3 });
    const down = cluster.nodes[2]!;
    await down.stop({ kill: true });
    const process = ServiceProcess.start("delivery", serviceEnv(cluster, uniqueNamespace()));
    try {
      // Either the two live nodes serve it, or it waits (saying so in /readyz) until the third is back.
      await waitFor(
        "delivery to be ready or to report what it waits for",
        async () =>
          /"msg":"delivery ready"/.test(process.output) ||
          (/"msg":"waiting for /.test(process.output) && (await readyz(process)).status === 503),
        { timeoutMs: READY_WITHIN_MS },
      );
      if (!/"msg":"delivery ready"/.test(process.output)) {
        const waiting = await readyz(process);
        expect(waiting.body.ready).toBe(false);
        expect(waiting.body.reason).toMatch(/starting: waiting for /);
      }
      await down.start();
      await process.ready("delivery", READY_WITHIN_MS);
      expect((await readyz(process)).status).toBe(200);
    } finally {
      await process.dispose();
      await cluster.dispose();
    }
  }, 300_000);

  it("an election after the calls stream's leader node is killed keeps ingest ready, and calls meanwhile get 200 or 503 with Retry-After", async () => {
    const cluster = await NatsCluster.start({ size: 3 });
    const namespace = uniqueNamespace();
    const callsStream = busNames(namespace).callsStream;
    // A first replica makes the streams, so that the leader is known before the measured replica starts.
    const setup = ServiceProcess.start("ingest", serviceEnv(cluster, namespace));
    let ingest: ServiceProcess | undefined;
    let nc: NatsConnection | undefined;
    try {
      await setup.ready("ingest", READY_WITHIN_MS);
      const probe = await connect({ servers: cluster.servers });
      const leader = await jetstreamManager(probe)
        .then((jsm) => jsm.streams.info(callsStream))
        .then((info) => info.cluster?.leader)
        .finally(() => probe.close());
      const victim = cluster.nodes.findIndex((_, index) => `n${index + 1}` === leader);
      expect(victim).toBeGreaterThanOrEqual(0);
      await setup.dispose();

      // A replica whose own NATS link drops is rightly unready while it reconnects; what must hold is
      // that the election alone takes no replica out. So the measured replica, and this test's
      // client, are linked to the surviving nodes only.
      const survivors = cluster.nodes.filter((_, index) => index !== victim).map((node) => node.url);
      ingest = ServiceProcess.start("ingest", { ...serviceEnv(cluster, namespace), NATS_URL: survivors.join(",") });
      const ready = await ingest.ready("ingest", READY_WITHIN_MS);
      nc = await connect({ servers: survivors });
      const jsm = await jetstreamManager(nc);

      const seen = { readyz: new Map<number, number>(), calls: new Map<string, number>() };
      const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);
      const auth = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;
      let sent = 0;
      const sendCall = async () => {
        const response = await fetch(`http://127.0.0.1:${ready.httpPort as number}/v1/track`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify({ userId: "u1", event: "Election", messageId: `election-${sent++}` }),
        });
        await response.arrayBuffer();
        count(
          seen.calls,
          response.status === 503 ? `503 retry-after=${response.headers.get("retry-after") !== null}` : String(response.status),
        );
      };

      await cluster.nodes[victim]!.stop({ kill: true });
      // Until the stream has a new leader that answers, and a little past it.
      let electedAt: number | undefined;
      const measured = ingest;
      await waitFor(
        "the calls stream to elect a new leader",
        async () => {
          count(seen.readyz, (await readyz(measured)).status);
          await sendCall();
          if (electedAt === undefined) {
            const info = await jsm.streams.info(callsStream).catch(() => undefined);
            if (info?.cluster?.leader && info.cluster.leader !== leader) electedAt = Date.now();
          }
          return electedAt !== undefined && Date.now() - electedAt > 1_000;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      expect([...seen.readyz.keys()]).toEqual([200]);
      expect([...seen.calls.keys()].filter((status) => status !== "200" && status !== "503 retry-after=true")).toEqual([]);
      expect(seen.calls.get("200") ?? 0).toBeGreaterThan(0);
    } finally {
      await nc?.close();
      await setup.dispose();
      await ingest?.dispose();
      await cluster.dispose();
    }
  }, 300_000);
});
