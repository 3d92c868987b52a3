import type { KV } from "@nats-io/kv";
import type { Logger } from "@switchyard/platform";

export interface Counts {
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
}

const zero = (): Counts => ({ delivered: 0, failedAttempts: 0, deadLettered: 0 });

/**
 * Delivery counts per destination. Each replica counts in memory and adds
 * its counts to a KV record once a second with compare-and-set, so totals
 * survive restarts and add up across replicas without a write per delivery.
 */
export class DeliveryStats {
  private pending = new Map<string, Counts>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly kv: KV,
    private readonly logger: Logger,
    flushEveryMs = 1_000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  add(destinationId: string, counts: Partial<Counts>): void {
    // Called for every webhook: one lookup, and a new entry only for a destination new since the last flush.
    let current = this.pending.get(destinationId);
    if (!current) {
      current = zero();
      this.pending.set(destinationId, current);
    }
    if (counts.delivered) current.delivered += counts.delivered;
    if (counts.failedAttempts) current.failedAttempts += counts.failedAttempts;
    if (counts.deadLettered) current.deadLettered += counts.deadLettered;
  }

  /** Writes the counts gathered so far. Concurrent calls run one after the other. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  async read(destinationId?: string): Promise<Map<string, Counts>> {
    await this.flush();
    const result = new Map<string, Counts>();
    const keys = destinationId ? [statsKey(destinationId)] : await collect(await this.kv.keys("destination.*"));
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry && entry.operation === "PUT") result.set(key.slice("destination.".length), entry.json<Counts>());
    }
    return result;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async writePending(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    for (const [destinationId, counts] of batch) {
      try {
        await this.addToRecord(statsKey(destinationId), counts);
      } catch (error) {
        this.logger.warn({ err: error, destinationId }, "could not write delivery counts; keeping them for the next flush");
        this.add(destinationId, counts);
      }
    }
  }

  private async addToRecord(key: string, counts: Counts): Promise<void> {
    for (let tries = 0; tries < 20; tries++) {
      const entry = await this.kv.get(key);
      const current = entry && entry.operation === "PUT" ? entry.json<Counts>() : zero();
      const next = JSON.stringify({
        delivered: current.delivered + counts.delivered,
        failedAttempts: current.failedAttempts + counts.failedAttempts,
        deadLettered: current.deadLettered + counts.deadLettered,
      });
      try {
        if (entry) await this.kv.update(key, next, entry.revision);
        else await this.kv.create(key, next);
        return;
      } catch {
        // Another replica wrote first; read again and retry.
      }
    }
    throw new Error(`could not update ${key}: too many concurrent writers`);
  }
}

function statsKey(destinationId: string): string {
  return `destination.${destinationId}`;
}

async function collect(iterator: AsyncIterable<string>): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of iterator) keys.push(key);
  return keys;
}
