/** One sample of the Prometheus text format: `name{label="value",...} 12`. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * What a /metrics endpoint answered, parsed. Enough of the text format for
 * tests: samples with labels (escaped quotes included); comments skipped.
 */
export class MetricsSnapshot {
  constructor(readonly samples: MetricSample[]) {}

  static parse(text: string): MetricsSnapshot {
    const samples: MetricSample[] = [];
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
      }
      samples.push({ name: match[1]!, labels, value: Number(match[3]) });
    }
    return new MetricsSnapshot(samples);
  }

  /** GETs `url` (a service's /metrics) and parses the answer; throws on a non-200 answer. */
  static async scrape(url: string): Promise<MetricsSnapshot> {
    const response = await fetch(url);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${text}`);
    return MetricsSnapshot.parse(text);
  }

  /** Sum of the samples named `name` whose labels include `labels` (0 when there are none). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples
      .filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
      .reduce((sum, sample) => sum + sample.value, 0);
  }

  /** Whether any sample has this name. */
  has(name: string): boolean {
    return this.samples.some((sample) => sample.name === name);
  }
}
