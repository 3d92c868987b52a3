import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { BusConnection } from "../nats-connection.js";

/**
 * What /readyz reports. `reason` names the first failed check, for a human reading a probe
 * failure; while a failure is still within the grace, `ready` stays true and `reason` names it.
 */
export interface ReadinessReport {
  ready: boolean;
  reason?: string;
  /** Set while a requirement fails but has not failed for longer than the grace yet: since when it fails (ISO time). */
  failingSince?: string;
  checks: { name: string; ok: boolean; reason?: string }[];
}

/** The JetStream objects a service needs before it can do its work. */
export interface BusRequirements {
  bus: BusConnection;
  /** Stream names (a KV bucket is stream KV_<bucket>, an object store OBJ_<bucket>: see kvStream/objectStoreStream). */
  streams: string[];
  /** Durable consumers, as [stream, consumer]. */
  consumers?: [stream: string, consumer: string][];
}

export const kvStream = (bucket: string) => `KV_${bucket}`;
export const objectStoreStream = (bucket: string) => `OBJ_${bucket}`;

/** How often readiness is re-checked without a probe asking, to keep gRPC health current. */
const DEFAULT_INTERVAL_MS = 5_000;
/** How long a requirement may fail before readiness turns false: longer than a stream leader election. */
export const DEFAULT_READINESS_GRACE_MS = 15_000;

export interface ReadinessOptions {
  /** How often to re-check without a probe asking. */
  intervalMs?: number;
  /**
   * Once ready, how long a stream or consumer look-up may fail (timing out while its leader is
   * elected) before readiness turns false (SWITCHYARD_READINESS_GRACE_MS).
   * A load balancer keeps every replica through a short election instead of losing them all at
   * once; calls that cannot be stored meanwhile are answered UNAVAILABLE / 503 with Retry-After.
   */
  graceMs?: number;
  /** The clock; tests pass their own. */
  now?: () => number;
}
/** A probe must answer within its own timeout (usually a few seconds), so JetStream gets less. */
const LOOKUP_TIMEOUT_MS = 2_000;

/**
 * Whether a service can do its work right now: connected to NATS, and every
 * stream, bucket and consumer it relies on exists. Before watch() (the
 * service is still connecting and preparing streams) and after shutdown() it
 * is unready. Checked fresh for every /readyz probe, and also every few
 * seconds and at once when the NATS link changes, so that listeners (gRPC
 * health) follow without anybody probing.
 */
export class Readiness {
  private requirements: (BusRequirements & { jsm: JetStreamManager }) | undefined;
  private stoppedReason: string | undefined;
  private lastReady: boolean | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ReadinessReport> | undefined;
  private readonly listeners: ((ready: boolean) => void)[] = [];
  private startingReason = "starting: connecting to NATS";
  /** When the current run of failed checks began, once the service had been ready. */
  private failingSinceMs: number | undefined;
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly now: () => number;

  constructor(options: ReadinessOptions = {}) {
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.graceMs = options.graceMs ?? DEFAULT_READINESS_GRACE_MS;
    this.now = options.now ?? Date.now;
  }

  /** What the service is doing or waiting for before watch(), as "starting: ..." reports say. */
  starting(reason: string): void {
    this.startingReason = `starting: ${reason}`;
  }

  /** `listener` hears every change of readiness (and the current state at the first check). */
  onChange(listener: (ready: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** Starts checking the service's requirements; until this is called the service reports "starting". */
  async watch(requirements: BusRequirements): Promise<ReadinessReport> {
    const jsm = await jetstreamManager(requirements.bus.nc, { timeout: LOOKUP_TIMEOUT_MS, checkAPI: false });
    this.requirements = { ...requirements, jsm };
    requirements.bus.onLinkChange(() => void this.check());
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
    return this.check();
  }

  /** Reports unready from now on (the service is stopping), and tells the listeners. */
  shutdown(): void {
    this.stoppedReason = "shutting down";
    clearInterval(this.timer);
    this.publish(false);
  }

  /** Checks now. Concurrent callers share one round of look-ups. */
  check(): Promise<ReadinessReport> {
    this.running ??= this.evaluate().finally(() => (this.running = undefined));
    return this.running;
  }

  private async evaluate(): Promise<ReadinessReport> {
    const report = await this.report();
    // A shutdown that began while the look-ups ran wins.
    const final = this.stoppedReason ? unready("service", this.stoppedReason) : this.withinGrace(report);
    this.publish(final.ready);
    return final;
  }

  /**
   * A look-up that fails on a service that was ready (a stream or consumer not answering while
   * its leader is elected) counts only once it has lasted longer than the grace. A lost NATS
   * link or a missing stream counts at once: waiting does not bring them back.
   */
  private withinGrace(report: ReadinessReport): ReadinessReport {
    if (report.ready) {
      this.failingSinceMs = undefined;
      return report;
    }
    const lasting = report.checks.some(
      (check) => !check.ok && (check.name === "nats" || check.name === "service" || check.reason === "missing"),
    );
    if (lasting || this.lastReady !== true || this.requirements === undefined) {
      this.failingSinceMs = undefined;
      return report;
    }
    const now = this.now();
    this.failingSinceMs ??= now;
    if (now - this.failingSinceMs >= this.graceMs) return report;
    return { ...report, ready: true, failingSince: new Date(this.failingSinceMs).toISOString() };
  }

  private async report(): Promise<ReadinessReport> {
    if (this.stoppedReason) return unready("service", this.stoppedReason);
    const requirements = this.requirements;
    if (!requirements) return unready("service", this.startingReason);
    if (!requirements.bus.isConnected()) return unready("nats", "not connected to NATS");

    const { jsm, streams, consumers = [] } = requirements;
    const checks = await Promise.all([
      ...streams.map((stream) => lookUp(`stream ${stream}`, () => jsm.streams.info(stream).then(() => undefined))),
      ...consumers.map(([stream, consumer]) =>
        lookUp(`consumer ${stream}/${consumer}`, () => jsm.consumers.info(stream, consumer).then(() => undefined)),
      ),
    ]);
    const all = [{ name: "nats", ok: true }, ...checks];
    const failed = all.find((check) => !check.ok);
    return failed ? { ready: false, reason: `${failed.name}: ${failed.reason ?? "failed"}`, checks: all } : { ready: true, checks: all };
  }

  private publish(ready: boolean): void {
    if (this.lastReady === ready) return;
    this.lastReady = ready;
    for (const listener of this.listeners) listener(ready);
  }
}

function unready(name: string, reason: string): ReadinessReport {
  return { ready: false, reason: `${name}: ${reason}`, checks: [{ name, ok: false, reason }] };
}

async function lookUp(name: string, probe: () => Promise<undefined>): Promise<{ name: string; ok: boolean; reason?: string }> {
  try {
    await probe();
    return { name, ok: true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { name, ok: false, reason: /not found/i.test(message) ? "missing" : message };
  }
}
