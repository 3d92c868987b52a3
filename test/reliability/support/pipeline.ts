import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { busNames, type BusNames, CALLS_CONSUMER } from "@switchyard/bus";
import { freePort, LOOPBACK_CIDRS, ServiceProcess, uniqueNamespace, waitFor } from "@switchyard/testkit";

export type ServiceName = "ingest" | "delivery" | "audience-sync";

/** The fixed ports of each service, by key in Pipeline's port map. */
const SERVICE_PORTS: Record<ServiceName, string[]> = {
  ingest: ["ingestGrpc", "ingestHttp"],
  delivery: ["delivery"],
  "audience-sync": ["audience"],
};
/** Times a first start may be retried on other ports when one turned out taken. */
const PORT_RETRIES = 3;

export const WRITE_KEY = "wk_reliability_suite_000001";
export const ADMIN_TOKEN = "reliability-admin-token-0123456789";

/** One source, "web", connected to one webhook destination per URL given. */
export function workspaceFor(destinations: Record<string, string>): object {
  return {
    sources: [{ id: "web", writeKeys: [WRITE_KEY] }],
    destinations: Object.entries(destinations).map(([id, url]) => ({ id, settings: { webhooks: [{ url }] } })),
    connections: Object.keys(destinations).map((destinationId) => ({ sourceId: "web", destinationId })),
  };
}

export interface PipelineOptions {
  /** NATS_URL: one server, or every node of a cluster, comma-separated. */
  natsUrl: string;
  workspace: object;
  services: ServiceName[];
  replicas?: 1 | 3;
  /** Extra environment per service. */
  env?: Partial<Record<ServiceName, Record<string, string>>>;
}

/**
 * Switchyard's services as real child processes on fixed loopback ports (so a
 * restarted one comes back where clients expect it), one namespace, seeded
 * from one workspace file. Any service can be SIGKILLed and started again.
 */
export class Pipeline {
  readonly namespace = uniqueNamespace();
  readonly names: BusNames = busNames(this.namespace);
  readonly processes = new Map<ServiceName, ServiceProcess>();
  /** Starts of each service so far, restarts included. */
  readonly starts = new Map<ServiceName, number>();
  private readonly ports = new Map<string, number>();
  /** Services that have been ready at least once: their ports are fixed from then on. */
  private readonly readyOnce = new Set<ServiceName>();

  private constructor(
    private readonly options: PipelineOptions,
    private readonly dir: string,
    readonly nc: NatsConnection,
    readonly jsm: JetStreamManager,
  ) {}

  static async start(options: PipelineOptions): Promise<Pipeline> {
    const dir = await mkdtemp(join(tmpdir(), "switchyard-reliability-"));
    await writeFile(join(dir, "workspace.json"), JSON.stringify(options.workspace));
    const nc = await connect({ servers: options.natsUrl.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    const pipeline = new Pipeline(options, dir, nc, await jetstreamManager(nc));
    for (const key of ["ingestGrpc", "ingestHttp", "delivery", "audience"]) pipeline.ports.set(key, await freePort());
    // One after the other: each creates the streams it needs; at the same time they would race to create the same ones.
    for (const service of options.services) await pipeline.startService(service);
    return pipeline;
  }

  get ingestTarget(): string {
    return `127.0.0.1:${this.port("ingestGrpc")}`;
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.port("ingestHttp")}`;
  }

  get audienceTarget(): string {
    return `127.0.0.1:${this.port("audience")}`;
  }

  get deliveryTarget(): string {
    return `127.0.0.1:${this.port("delivery")}`;
  }

  async startService(service: ServiceName, portRetries = 0): Promise<ServiceProcess> {
    const common = {
      NATS_URL: this.options.natsUrl,
      SWITCHYARD_NAMESPACE: this.namespace,
      SWITCHYARD_WORKSPACE_FILE: join(this.dir, "workspace.json"),
      SWITCHYARD_STREAM_REPLICAS: String(this.options.replicas ?? 1),
      SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SHUTDOWN_GRACE_MS: "2000",
      // Free ops ports: never the defaults another run may hold.
      INGEST_OPS_PORT: "0",
      DELIVERY_OPS_PORT: "0",
      AUDIENCE_OPS_PORT: "0",
    };
    const own: Record<ServiceName, Record<string, string>> = {
      ingest: { INGEST_GRPC_PORT: String(this.port("ingestGrpc")), INGEST_HTTP_PORT: String(this.port("ingestHttp")) },
      // The receivers are on loopback: allow it past the outbound-address guard.
      delivery: { DELIVERY_GRPC_PORT: String(this.port("delivery")), DELIVERY_ALLOWED_CIDRS: LOOPBACK_CIDRS },
      "audience-sync": { AUDIENCE_GRPC_PORT: String(this.port("audience")) },
    };
    const child = ServiceProcess.start(service, { ...common, ...own[service], ...this.options.env?.[service] });
    this.processes.set(service, child);
    this.starts.set(service, (this.starts.get(service) ?? 0) + 1);
    try {
      await child.waitForOutput(new RegExp(`"${service} ready"`), 60_000);
    } catch (error) {
      // A port freePort() found free was taken before the service bound it (another process's
      // port-0 bind can land on it). On a first start nothing expects these ports yet: pick others.
      const firstStart = !this.readyOnce.has(service);
      if (!firstStart || !/the port is in use/.test(child.output) || portRetries >= PORT_RETRIES) {
        // What the service said is the only clue to why it never got ready.
        const said = child.output.split("\n").slice(-30).join("\n");
        throw new Error(`${service} (start ${this.starts.get(service)}) did not get ready; its last output:\n${said}`, { cause: error });
      }
      this.processes.delete(service);
      for (const key of SERVICE_PORTS[service]) this.ports.set(key, await freePort());
      return this.startService(service, portRetries + 1);
    }
    this.readyOnce.add(service);
    return child;
  }

  /** SIGKILL: no shutdown, no draining, as when a machine dies. */
  async kill(service: ServiceName): Promise<void> {
    const child = this.processes.get(service);
    if (!child) throw new Error(`${service} is not running`);
    child.signal("SIGKILL");
    const exit = await child.exited();
    if (exit.signal !== "SIGKILL")
      throw new Error(`${service} exited on its own before the kill: ${JSON.stringify(exit)}\n${child.output}`);
    this.processes.delete(service);
  }

  /** True once delivery has handled every stored batch and no retry is waiting. */
  async settled(): Promise<boolean> {
    const stream = await this.jsm.streams.info(this.names.callsStream);
    const consumer = await this.jsm.consumers.info(this.names.callsStream, CALLS_CONSUMER);
    const retry = await this.jsm.streams.info(this.names.retryStream);
    return consumer.ack_floor.stream_seq === stream.state.last_seq && consumer.num_ack_pending === 0 && retry.state.messages === 0;
  }

  async waitSettled(timeoutMs: number): Promise<void> {
    await waitFor("delivery to settle", () => this.settled(), { timeoutMs, intervalMs: 250 });
  }

  /**
   * Dead letters stored. Soon after a cluster lost a node, a stream nothing was written to may still
   * be electing a new leader and leave the request unanswered: it is asked again until it answers.
   */
  async deadLetters(): Promise<number> {
    return waitFor("the dead-letter stream to answer", async () => (await this.jsm.streams.info(this.names.deadStream)).state.messages, {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.processes.values()].map((child) => child.dispose()));
    this.processes.clear();
    await this.nc.close();
    await rm(this.dir, { recursive: true, force: true });
  }

  private port(key: string): number {
    const port = this.ports.get(key);
    if (port === undefined) throw new Error(`no port for ${key}`);
    return port;
  }
}
