import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { freePort } from "./free-port.js";
import { NatsServer } from "./nats-server.js";
import { waitFor } from "./wait-for.js";

/**
 * A JetStream cluster of real nats-servers on loopback ports, each with its
 * own temp store, routed to each other. Nodes can be stopped (or killed) and
 * started again on the same ports and stores, to test losing a node.
 */
export class NatsCluster {
  private constructor(readonly nodes: NatsServer[]) {}

  static async start({ size = 3, name = "switchyard-test" }: { size?: number; name?: string } = {}): Promise<NatsCluster> {
    const clientPorts = await distinctFreePorts(size);
    const routePorts = await distinctFreePorts(size, clientPorts);
    const routes = routePorts.map((port) => `nats://127.0.0.1:${port}`).join(",");
    // Started together: a JetStream node waits for its peers to elect a meta leader.
    const nodes = await Promise.all(
      clientPorts.map((port, index) =>
        NatsServer.start({
          port,
          args: [
            "--server_name",
            `n${index + 1}`,
            "--cluster_name",
            name,
            "--cluster",
            `nats://127.0.0.1:${routePorts[index]}`,
            "--routes",
            routes,
          ],
        }),
      ),
    );
    const cluster = new NatsCluster(nodes);
    await cluster.waitForJetStream();
    return cluster;
  }

  /** Every node's client URL, comma-separated, as NATS_URL takes them. */
  get urls(): string {
    return this.nodes.map((node) => node.url).join(",");
  }

  get servers(): string[] {
    return this.nodes.map((node) => node.url);
  }

  /** Resolves once JetStream answers through the cluster (a meta leader was elected). */
  async waitForJetStream(timeoutMs = 30_000): Promise<void> {
    const nc = await connect({ servers: this.nodes.filter((node) => node.running).map((node) => node.url) });
    try {
      // checkAPI off: the check itself would fail (time out) until the leader is elected, which is what we wait for.
      const jsm = await jetstreamManager(nc, { timeout: 2_000, checkAPI: false });
      await waitFor("the JetStream cluster to elect a meta leader", async () => (await jsm.getAccountInfo()) !== undefined, {
        timeoutMs,
        intervalMs: 200,
      });
    } finally {
      await nc.close();
    }
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.dispose()));
  }
}

async function distinctFreePorts(count: number, taken: number[] = []): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port) && !taken.includes(port)) ports.push(port);
  }
  return ports;
}
