/**
 * Writes the figures tables of docs/performance.md and docs/reliability.md from the latest result
 * files in bench/results, between their marker comments, so the docs show what the files hold
 * and nothing older: `npm run gen:perf-doc`. With `--check` it writes nothing and exits 1 when a
 * table differs from what the files give (CI runs it next to `gen:check`).
 *
 * Each table row names the command that reproduces it. A missing result file shows as "no result"
 * and a figure it lacks as "?", rather than failing, so a benchmark can be added before its first run.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS = join(ROOT, "bench", "results");

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- result files are JSON of many shapes, read loosely: what is absent shows as "?"
type Json = any;

function result(name: string): Json | undefined {
  const path = join(RESULTS, `${name}-latest.json`);
  return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : undefined;
}

const NONE = "no result";

/** An integer with thousands separators, or a decimal with `digits` digits. */
function num(value: unknown, digits = 0): string {
  if (typeof value !== "number" || !Number.isFinite(value)) return "?";
  return digits === 0 ? Math.round(value).toLocaleString("en-US") : value.toFixed(digits);
}

function ratio(value: unknown, digits = 2): string {
  return `${num(value, digits)} ×`;
}

/** ✓ met, ✗ missed, – when the benchmark only reports. */
function met(...passes: unknown[]): string {
  if (passes.length === 0) return "–";
  if (passes.some((pass) => typeof pass !== "boolean")) return "?";
  return passes.every(Boolean) ? "✓" : "✗";
}

interface Row {
  command: string;
  /** The result file, without -latest.json. */
  file: string;
  figure: (r: Json) => string;
  target: string;
  pass: (r: Json) => string;
}

const ROWS: Row[] = [
  {
    command: "npm run bench:ingest",
    file: "ingest",
    figure: (r) =>
      `${num(r.ingestCallsPerSecond)} calls/s against ${num(r.rawPublishesPerSecond)} publishes/s, ${ratio(r.ratio)}; ` +
      `ingest ${num(r.ingestRuns?.[0]?.ingestCpuMicrosPerCall, 1)} µs CPU a call`,
    target: "≥ 4 ×",
    pass: (r) => met(r.target?.pass),
  },
  {
    command: "npm run bench:ingest -- --insights",
    file: "ingest-insights",
    figure: (r) => `${num(r.callsPerSecondWith)} against ${num(r.callsPerSecondWithout)} calls/s, ${ratio(r.ratio, 3)}`,
    target: "≥ 0.95 ×",
    pass: (r) => met(r.target?.pass),
  },
  {
    command: "npm run bench:ingest-http",
    file: "ingest-http",
    figure: (r) =>
      `${num(r.http?.callsPerSecond)} calls/s, ${ratio(r.httpOverReference, 3)} the reference's; ` +
      `CPU a call ${num(r.http?.serverCpuMicrosPerCall, 2)} µs, ${ratio(r.httpCpuOverGrpcCpu)} gRPC's`,
    target: "≥ 0.7 ×, ≤ 1.5 ×",
    pass: (r) => met(r.goals?.httpOverReference?.pass, r.goals?.httpCpuOverGrpcCpu?.pass),
  },
  {
    command: "npm run bench:pipeline",
    file: "pipeline",
    figure: (r) =>
      `${num(r.deliveredCallsPerSecond)} delivered calls/s, every call once; ` +
      `busiest ${r.boundedBy ?? "?"} at ${num((r.coreShare?.[r.boundedBy] ?? NaN) * 100)} % of a core`,
    target: "report",
    pass: () => met(),
  },
  {
    command: "npm run bench:delivery -- --phases throughput",
    file: "delivery",
    figure: (r) =>
      `${num(r.throughput?.delivered?.perSecond)} against ${num(r.throughput?.raw?.perSecond)}/s, ${ratio(r.throughput?.ratio, 3)}`,
    target: "≥ 0.7 × (goal 0.9 ×)",
    pass: (r) => met(r.targets?.throughputRatio?.pass),
  },
  {
    command: "npm run bench:delivery -- --phases isolation",
    file: "delivery",
    figure: (r) =>
      `${ratio(r.isolation?.ratio)} beside the failing one, ${ratio(r.isolation?.limitedRatio)} beside the limited one ` +
      `(its busiest second ${num(r.isolation?.limitedBusiestWholeSecond)} requests, limit ${num(r.isolation?.limitedMaxRequestsPerSecond)})`,
    target: "≥ 0.9 ×",
    pass: (r) => met(r.targets?.isolationRatio?.pass, r.targets?.isolationLimitedRatio?.pass),
  },
  {
    command: "npm run bench:delivery -- --phases latency",
    file: "delivery",
    figure: (r) => `p50 ${num(r.latency?.p50Ms)} ms, p99 ${num(r.latency?.p99Ms)} ms`,
    target: "≤ 10 ms, ≤ 50 ms",
    pass: (r) => met(r.targets?.latencyP50Ms?.pass, r.targets?.latencyP99Ms?.pass),
  },
  {
    command: "npm run bench:delivery -- --phases latency-isolation",
    file: "delivery",
    figure: (r) =>
      `${ratio(r.latencyIsolation?.p99Ratio)} (first seconds ${ratio(r.latencyIsolation?.firstSecondsP99Ratio)}); ` +
      `p99 ${num(r.latencyIsolation?.alone?.p99Ms)} ms alone, ${num(r.latencyIsolation?.hostile?.p99Ms)} ms beside them`,
    target: "≤ 3 ×",
    pass: (r) => met(r.targets?.latencyIsolationP99Ratio?.pass, r.targets?.latencyIsolationFirstSecondsP99Ratio?.pass),
  },
  {
    command: "npm run bench:delivery -- --phases filters",
    file: "delivery",
    figure: (r) =>
      `${ratio(r.filters?.ratio, 3)}; CPU a webhook ${num(r.filters?.cpuMicrosPerRequest?.filtered)} against ` +
      `${num(r.filters?.cpuMicrosPerRequest?.plain)} µs`,
    target: "≥ 0.95 ×",
    pass: (r) => met(r.targets?.filterRatio?.pass),
  },
  {
    command: "npm run bench:call-scan",
    file: "call-scan",
    figure: (r) =>
      `gRPC call scan + quick rules ${num(r.microsPerCall?.scan, 2)} µs a call, Call.decode ${num(r.microsPerCall?.decode, 2)} µs (${ratio(r.scanOverDecode)})`,
    target: "reports",
    pass: () => met(),
  },
  {
    command: "npm run bench:mappings",
    file: "mappings",
    figure: (r) =>
      `Webhooks (Actions) CPU a call: typical mapping ${num(r.microsPerCall?.typicalMapping, 1)} µs, default ${num(r.microsPerCall?.defaultMapping, 1)} µs, ` +
      `classic body ${num(r.microsPerCall?.none, 1)} µs (${ratio(r.ratioToNone?.typicalMapping, 1)})`,
    target: "reports",
    pass: () => met(),
  },
  {
    command: "npm run bench:actions-batches",
    file: "actions-batches",
    figure: (r) =>
      `calls/s in batches of 100 ${ratio(r.ratios?.["batch-100"], 1)}, of 1000 ${ratio(r.ratios?.["batch-1000"], 1)} one by one; ` +
      `CPU a call ${num(r.results?.["batch-1000"]?.cpuMicrosPerCall)} against ${num(r.results?.classic?.cpuMicrosPerCall)} µs`,
    target: "≥ 10 ×",
    pass: (r) => met(r.ratios?.["batch-100"] >= 10 && r.ratios?.["batch-1000"] >= 10),
  },
  {
    command: "npm run bench:client",
    file: "client",
    figure: (r) =>
      `enqueue ${ratio(r.ratios?.enqueue, 1)}, heap 1/${num(r.ratios?.heapPerCall, 1)}, delivered ${ratio(r.ratios?.delivered, 1)}`,
    target: "≥ 10 ×, ≥ 10, ≥ 3 ×",
    pass: (r) => met(r.targets?.enqueue?.pass, r.targets?.heapPerCall?.pass, r.targets?.delivered?.pass),
  },
  {
    command: "npm run bench:audience",
    file: "audience",
    figure: (r) =>
      `re-sync ${ratio(r.resyncToFirstRatio, 3)} the first (CPU ${ratio(r.resyncToFirstServiceCpuRatio, 3)}); peak RSS ${num(r.peakRssMiB)} MiB`,
    target: "< 0.1 ×",
    pass: (r) => met(r.targets?.resyncRatio?.pass),
  },
  {
    command: "npm run bench:audience -- --large",
    file: "audience-large",
    figure: (r) => `re-sync ${ratio(r.resyncToFirstRatio, 3)} the first; peak RSS ${num(r.peakRssMiB)} MiB`,
    target: "< 0.1 ×, < 256 MiB",
    pass: (r) => met(r.targets?.resyncRatio?.pass, r.targets?.peakRss?.pass),
  },
  {
    command: "npm run bench:gzip",
    file: "gzip-bomb",
    figure: (r) => {
      const cpu = (name: string) => r.scenarios?.find((s: Json) => s.name === name)?.ingestCpuMsPerRequest;
      return `${num(cpu("bomb"), 1)} ms a bomb, ${num(cpu("reference"), 1)} ms the reference`;
    },
    target: "< 100 ms",
    pass: (r) => met(r.target?.pass),
  },
  {
    command: "npm run bench:cli",
    file: "cli-start",
    figure: (r) =>
      `--help ${num((r.results?.help?.bundleMedianSeconds ?? NaN) * 1000)} ms, send ${num((r.results?.send?.bundleMedianSeconds ?? NaN) * 1000)} ms`,
    target: "< 0.5 s",
    pass: (r) => met(r.results?.help?.bundleMedianSeconds < r.targetSeconds, r.results?.send?.bundleMedianSeconds < r.targetSeconds),
  },
  {
    command: "npm run bench:console",
    file: "console",
    figure: (r) =>
      `${num(r.results?.firstPageReady?.medianMs)} ms median (p95 ${num(r.results?.firstPageReady?.p95Ms)} ms); ` +
      `${num((r.results?.bundle?.scriptAndStyleGzipBytes ?? NaN) / 1024, 1)} KB`,
    target: "< 1 s, < 300 KB",
    pass: (r) => met(r.results?.met?.firstPageReady, r.results?.met?.bundleSize),
  },
  {
    command: "npm run bench:attempt-log",
    file: "attempt-log",
    figure: (r) => {
      const pages = Object.entries(r.pages ?? {}) as [string, Json][];
      const worst = pages.reduce<[string, Json] | undefined>((a, b) => (a === undefined || b[1].p99Ms > a[1].p99Ms ? b : a), undefined);
      return worst ? `p99 at most ${num(worst[1].p99Ms)} ms (${worst[0]} pages)` : NONE;
    },
    target: "p99 < 100 ms",
    pass: (r) => met(r.target?.met),
  },
  {
    command: "npm run bench:publish",
    file: "publish",
    figure: (r) => `${num(r.cpuMicrosPerPublish?.acked, 1)} against ${num(r.cpuMicrosPerPublish?.reference, 1)} µs, ${ratio(r.ratio)}`,
    target: "report",
    pass: () => met(),
  },
  {
    command: "npm run bench:http-send",
    file: "http-send",
    figure: (r) =>
      `${num(r.summary?.request?.cpuMicrosPerRequest, 1)}, ${num(r.summary?.dispatch?.cpuMicrosPerRequest, 1)} and ` +
      `${num(r.summary?.socket?.cpuMicrosPerRequest, 1)} µs a request`,
    target: "report",
    pass: () => met(),
  },
  {
    command: "npm run bench:stream-leader",
    file: "stream-leader",
    figure: (r) => `${num(r.callsPerSecond?.r3)} against ${num(r.callsPerSecond?.r1)} calls/s, ${ratio(r.ratio, 3)}`,
    target: "report",
    pass: () => met(),
  },
];

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

/** Where a result was measured: the CPU's short name and the commit ("+": with uncommitted changes). */
function runOn(machine: Json): string {
  if (machine === undefined) return "–";
  const cpu = String(machine.cpuModel ?? "?")
    .replace(/\((R|TM)\)/g, "")
    .replace(/\s+(Processor|CPU).*$/, "")
    .trim();
  const commit = machine.gitCommit ? `${machine.gitCommit}${machine.gitDirty ? "+" : ""}` : "?";
  return `${cpu}, ${commit}`;
}

/** The distinct values of one machine fact over the result files, for the line under a table. */
function versions(files: string[], read: (machine: Json) => unknown): string {
  const values = new Set<string>();
  for (const file of files) {
    const value = read(result(file)?.machine);
    if (typeof value === "string" && value !== "") values.add(value);
  }
  return [...values].sort().join(", ") || "?";
}

function performanceTable(): string {
  const lines = ["| Command | Latest | Target | Met | Run on |", "| --- | --- | --- | --- | --- |"];
  for (const row of ROWS) {
    const r = result(row.file);
    const figure = r === undefined ? NONE : row.figure(r);
    const pass = r === undefined ? "–" : row.pass(r);
    lines.push(`| \`${row.command}\` | ${cell(figure)} | ${row.target} | ${pass} | ${runOn(r?.machine)} |`);
  }
  const files = [...new Set(ROWS.map((row) => row.file))];
  const cores = versions(files, (m) => (m?.cpuCount ? `${m.cpuCount}-core` : undefined));
  const node = versions(files, (m) => m?.nodeVersion);
  const nats = versions(files, (m) => m?.natsServerVersionConnected);
  lines.push(
    "",
    `Run on ${cores} machines, with Node ${node} and nats-server ${nats}; "+" marks a commit with uncommitted changes. ` +
      "The result files hold every figure of a run and the machine's load.",
  );
  return lines.join("\n");
}

function reliabilityTable(): string {
  const lines = [
    "| Profile | Scenario | Accepted | Delivered | Lost | Duplicates | Command |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  const fuzzLines = ["| Profile | Target | Cases | Outcomes | Command |", "| --- | --- | --- | --- | --- |"];
  const machines: string[] = [];
  for (const profile of ["short", "long"]) {
    const r = result(`reliability-${profile}`);
    if (r === undefined) {
      lines.push(`| ${profile} | ${NONE} | | | | | |`);
      continue;
    }
    const scenarios = Object.values(r.scenarios ?? {}) as Json[];
    scenarios.sort((a, b) => String(a.scenario).localeCompare(String(b.scenario)));
    for (const s of scenarios) {
      const dead = s.details?.deadLettered ? ` (${num(s.details.deadLettered)} dead-lettered)` : "";
      lines.push(
        `| ${profile} | ${s.scenario} | ${num(s.accepted)} | ${num(s.delivered)}${dead} | ${num(s.lost)} | ${num(s.duplicates)} | \`${cell(s.command)}\` |`,
      );
    }
    const fuzz = Object.values(r.fuzz ?? {}) as Json[];
    fuzz.sort((a, b) => String(a.target).localeCompare(String(b.target)));
    for (const f of fuzz) {
      const outcomes = Object.entries(f.details?.outcomes ?? {}) as [string, number][];
      outcomes.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
      const text = outcomes.map(([name, count]) => `${name} ${num(count)}`).join(", ");
      fuzzLines.push(`| ${profile} | ${f.target} | ${num(f.cases)} | ${cell(text)} | \`${cell(f.command)}\` |`);
    }
    const m = r.machine ?? {};
    machines.push(
      `${profile}: ${m.cpuModel ?? "?"} × ${m.cpuCount ?? "?"}, Node ${m.nodeVersion ?? "?"}, ` +
        `nats-server ${m.natsServerVersionConnected ?? "?"}, commit ${m.gitCommit ?? "?"}${m.gitDirty ? " (changed)" : ""}`,
    );
  }
  return [...lines, "", ...fuzzLines, "", `Run on: ${machines.join("; ")}.`].join("\n");
}

interface Target {
  doc: string;
  marker: string;
  table: () => string;
}

const TARGETS: Target[] = [
  { doc: "docs/performance.md", marker: "perf-table", table: performanceTable },
  { doc: "docs/reliability.md", marker: "reliability-table", table: reliabilityTable },
];

async function render(target: Target): Promise<{ path: string; current: string; next: string }> {
  const path = join(ROOT, target.doc);
  const current = readFileSync(path, "utf8");
  const start = `<!-- ${target.marker}:start (written by npm run gen:perf-doc from bench/results; do not edit) -->`;
  const end = `<!-- ${target.marker}:end -->`;
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${target.doc}: needs the marker lines\n${start}\n${end}`);
  const replaced = `${current.slice(0, from)}${start}\n\n${target.table()}\n\n${current.slice(to)}`;
  const options = (await prettier.resolveConfig(path)) ?? {};
  return { path, current, next: await prettier.format(replaced, { ...options, filepath: path }) };
}

const check = process.argv.includes("--check");
let stale = false;
for (const target of TARGETS) {
  const { path, current, next } = await render(target);
  if (current === next) continue;
  if (check) {
    console.error(`${relative(ROOT, path)}: its table is not what bench/results holds: run 'npm run gen:perf-doc' and commit the result`);
    stale = true;
  } else {
    writeFileSync(path, next);
    console.log(`wrote ${relative(ROOT, path)}`);
  }
}
if (check && !stale) console.log("performance and reliability tables are up to date");
process.exitCode = stale ? 1 : 0;
