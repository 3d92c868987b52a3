import type { Registry } from "prom-client";

/** How a histogram's values are combined across worker processes (prom-client's AggregatorRegistry). */
type Aggregator = "sum" | "first" | "min" | "max" | "average" | "omit";

export interface LocalHistogramOptions {
  name: string;
  help: string;
  /** Upper bounds, ascending. */
  buckets: readonly number[];
  registers: Registry[];
  aggregator?: Aggregator;
}

/** One value of the histogram as prom-client's registries read it. */
interface HistogramValue {
  value: number;
  metricName: string;
  exemplar?: null;
  labels: { le?: number | string };
}

/**
 * A histogram without labels for hot paths. prom-client's Histogram looks up
 * its label set and allocates on every observation (twice per webhook in
 * delivery); here an observation is a bucket search and three
 * additions in plain numbers. It registers like prom-client's own metrics,
 * and what a registry shows of it (/metrics text, the JSON that worker
 * processes send to be added up) is exactly what a prom-client Histogram
 * with the same name, help and buckets shows after the same observations.
 */
export class LocalHistogram {
  readonly type = "histogram";
  readonly name: string;
  readonly help: string;
  readonly aggregator: Aggregator;
  private readonly bounds: Float64Array;
  /** Observations per bucket, not cumulative; the last counts those above every bound. */
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;
  /** False from a reset until the next observation: prom-client's histogram then shows no values at all. */
  private shown = true;

  constructor(options: LocalHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.aggregator = options.aggregator ?? "sum";
    for (let index = 1; index < options.buckets.length; index++) {
      if (!(options.buckets[index]! > options.buckets[index - 1]!)) throw new Error(`${options.name}: buckets must be ascending`);
    }
    this.bounds = Float64Array.from(options.buckets);
    this.counts = new Float64Array(options.buckets.length + 1);
    // prom-client's metrics register themselves the same way; the registry only reads name, get() and reset().
    for (const registry of options.registers) registry.registerMetric(this as never);
  }

  /** Counts a value into the first bucket whose bound is at least the value, as prom-client does. */
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let index = 0;
    while (index < bounds.length && value > bounds[index]!) index++;
    this.counts[index]!++;
    this.sum += value;
    this.count++;
    this.shown = true;
  }

  /** What the registry reads: cumulative buckets, then +Inf, sum and count, shaped as prom-client's Histogram.get() returns them. */
  async get(): Promise<{ name: string; help: string; type: "histogram"; values: HistogramValue[]; aggregator: Aggregator }> {
    const bucketName = `${this.name}_bucket`;
    const values: HistogramValue[] = [];
    if (!this.shown) return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
    let cumulative = 0;
    for (let index = 0; index < this.bounds.length; index++) {
      cumulative += this.counts[index]!;
      values.push({ value: cumulative, metricName: bucketName, exemplar: null, labels: { le: this.bounds[index]! } });
    }
    values.push(
      { value: this.count, metricName: bucketName, exemplar: null, labels: { le: "+Inf" } },
      { value: this.sum, metricName: `${this.name}_sum`, exemplar: undefined, labels: {} },
      { value: this.count, metricName: `${this.name}_count`, exemplar: undefined, labels: {} },
    );
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
    this.shown = false;
  }
}
