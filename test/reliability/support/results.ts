import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { machineFacts } from "../../../bench/lib/run-support.js";
import { profile } from "./profile.js";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const RESULTS_DIR = join(REPO_ROOT, "bench", "results");
/** When this test file started (each file runs in its own worker). */
const LOAD_AVERAGE_AT_START = os.loadavg();

/** One fault scenario's end-to-end count. `lost` must be 0. */
export interface ScenarioFigures {
  scenario: string;
  /** The test file, for the command that repeats it. */
  file: string;
  seed?: number;
  /** Calls whose client learned they were accepted. */
  accepted: number;
  /** Distinct accepted calls that reached the receiver. */
  delivered: number;
  lost: number;
  /** Calls that reached the receiver more than once. */
  duplicates: number;
  /** Requests beyond the first for those calls. */
  extraRequests: number;
  seconds: number;
  details?: Record<string, unknown>;
}

export interface FuzzFigures {
  target: string;
  file: string;
  seed: number;
  cases: number;
  details?: Record<string, unknown>;
}

/** The command that repeats a scenario with the same profile and seed. */
export function repeatCommand(file: string, seed?: number): string {
  const env = [`RELIABILITY_PROFILE=${profile.name}`, ...(seed === undefined ? [] : [`RELIABILITY_SEED=${seed}`])];
  return `${env.join(" ")} npx vitest run ${file}`;
}

/**
 * Prints one summary line per scenario and, when RELIABILITY_RESULTS=1 (npm
 * run test:reliability sets it), merges the figures into
 * bench/results/reliability-<profile>-latest.json, from which npm run
 * gen:perf-doc writes docs/reliability.md's table. Plain
 * `npm test` writes nothing, so CI leaves the checkout clean.
 */
export async function recordScenario(figures: ScenarioFigures, nc: NatsConnection): Promise<void> {
  const line =
    `RELIABILITY ${profile.name} ${figures.scenario}: accepted=${figures.accepted} delivered=${figures.delivered} ` +
    `lost=${figures.lost} duplicates=${figures.duplicates} extraRequests=${figures.extraRequests} ` +
    `seconds=${figures.seconds.toFixed(1)} seed=${figures.seed ?? "-"} | ${repeatCommand(figures.file, figures.seed)}`;
  process.stdout.write(`${line}\n`);
  await merge("scenarios", figures.scenario, { ...figures, command: repeatCommand(figures.file, figures.seed) }, nc);
}

export async function recordFuzz(figures: FuzzFigures, nc: NatsConnection): Promise<void> {
  process.stdout.write(
    `RELIABILITY ${profile.name} fuzz ${figures.target}: cases=${figures.cases} seed=${figures.seed} | ${repeatCommand(figures.file, figures.seed)}\n`,
  );
  await merge("fuzz", figures.target, { ...figures, command: repeatCommand(figures.file, figures.seed) }, nc);
}

async function merge(section: "scenarios" | "fuzz", key: string, entry: object, nc: NatsConnection): Promise<void> {
  if (process.env.RELIABILITY_RESULTS !== "1") return;
  const file = join(RESULTS_DIR, `reliability-${profile.name}-latest.json`);
  // Test files run in parallel workers: a lock directory (mkdir is atomic) serialises the read-modify-write.
  const lock = `${file}.lock`;
  await mkdir(RESULTS_DIR, { recursive: true });
  for (let tries = 0; ; tries++) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if (tries > 200) throw new Error(`cannot take ${lock}; remove it if no run is going on`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    let current: Record<string, unknown> = {};
    try {
      current = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
    } catch {
      current = {};
    }
    const sectionEntries = (current[section] as Record<string, unknown> | undefined) ?? {};
    sectionEntries[key] = { ...entry, date: new Date().toISOString() };
    const machine = await machineFacts(REPO_ROOT, nc, LOAD_AVERAGE_AT_START);
    const next = { benchmark: "reliability", profile: profile.name, ...current, machine, [section]: sectionEntries };
    await writeFile(`${file}.tmp`, `${JSON.stringify(next, null, 2)}\n`);
    await rename(`${file}.tmp`, file);
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
