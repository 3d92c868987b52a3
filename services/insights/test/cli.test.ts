import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  countedAll,
  publishFiltered,
  publishUsage,
  startInsightsFixture,
  storedCall,
  track,
  type InsightsFixture,
} from "@switchyard/testkit/fixtures/insights";

/** `switchyard schema` and `switchyard usage` run as users run them (the bin, as a child process) against the service. */

const BIN = fileURLToPath(new URL("../../../apps/cli/bin/switchyard.mjs", import.meta.url));

let fixture: InsightsFixture;
let env: Record<string, string>;
const at = new Date("2026-03-04T05:06:07Z");

function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...env, ...extraEnv }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  fixture = await startInsightsFixture();
  await fixture.publisher.publishCalls("web", "cli-1", [
    storedCall("c-1", at, track("Signed Up", { plan: "pro", seats: 2 })),
    storedCall("c-2", at, track("Signed Up", { plan: null })),
    storedCall("c-3", at, { $case: "identify", value: { traits: { email: "u1@example.com" } } }),
  ]);
  await publishFiltered(fixture, "web", "cli-blocked", [storedCall("c-4", at, track("Signed Up", { plan: "free" }))]);
  await publishUsage(fixture, { id: "cli-rejected", rejected: { sourceId: "web", receivedAt: at, count: 2 } });
  await publishUsage(fixture, {
    id: "cli-outcomes",
    outcomes: { sourceId: "web", destinationId: "hook", at, delivered: 3, filtered: 1, failed: 4, deadLettered: 0 },
  });
  await countedAll(fixture);
  env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    SWITCHYARD_INSIGHTS_ADDR: `127.0.0.1:${fixture.insights.grpcPort}`,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
  };
});
afterAll(async () => {
  await fixture?.dispose();
});

describe("switchyard schema", () => {
  it("prints a source's schema as a table, most recently seen first", async () => {
    const { code, stdout, stderr } = await cli(["schema", "web"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^TYPE\s+NAME\s+24H\s+7D\s+TOTAL\s+FILTERED\s+BLOCKED\s+LAST SEEN\s+KEYS$/);
    const signedUp = lines.find((line) => line.startsWith("track"))!;
    expect(signedUp.split(/\s{2,}/)).toEqual([
      "track",
      "Signed Up",
      "0",
      "0",
      "3",
      "1",
      "2026-03-04 05:06:07Z",
      "plan (string|null), seats (number)",
    ]);
    expect(lines.find((line) => line.startsWith("identify"))!.split(/\s{2,}/)).toEqual([
      "identify",
      "-",
      "0",
      "0",
      "1",
      "0",
      "2026-03-04 05:06:07Z",
      "email (string)",
    ]);
    expect(lines.at(-1)).toMatch(/^2 entries; name limit 1000, updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
  });

  it("prints the response as JSON with --json", async () => {
    const { code, stdout } = await cli(["schema", "web", "--json"]);
    expect(code).toBe(0);
    const answer = JSON.parse(stdout);
    expect(answer.sourceId).toBe("web");
    expect(answer.entries.map((entry: { name?: string; countTotal: number }) => [entry.name ?? "", entry.countTotal])).toEqual(
      expect.arrayContaining([
        ["Signed Up", 3],
        ["", 1],
      ]),
    );
  });

  it("says what is missing or wrong, with the exit code of a usage error or a failure", async () => {
    expect(await cli(["schema"])).toMatchObject({ code: 2, stderr: expect.stringContaining("which source?") });
    expect(await cli(["schema", "nowhere"])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('NOT_FOUND: source_id: no source "nowhere"'),
    });
    expect(await cli(["schema", "web"], { SWITCHYARD_ADMIN_TOKEN: "" })).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("InsightsService needs the admin token"),
    });
    expect(await cli(["schema", "web", "--token", "a-wrong-admin-token-000"])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("UNAUTHENTICATED: wrong admin token"),
    });
  });
});

describe("switchyard usage", () => {
  it("prints usage per day and source, with a row per destination", async () => {
    const { code, stdout, stderr } = await cli(["usage", "--source", "web", "--from", "2026-03-01", "--to", "2026-03-31"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^DAY\s+SOURCE\s+DESTINATION\s+ACCEPTED\s+FILTERED\s+REJECTED\s+DELIVERED\s+FAILED\s+DEAD-LETTERED$/);
    expect(lines[1]!.split(/\s{2,}/)).toEqual(["2026-03-04", "web", "4", "1", "2"]);
    expect(lines[2]!.trim().split(/\s{2,}/)).toEqual(["hook", "1", "3", "4", "0"]);
    expect(lines).toHaveLength(3);
  });

  it("prints the response as JSON with --json, and nothing for days without usage", async () => {
    const { stdout } = await cli(["usage", "--from", "2026-03-04", "--to", "2026-03-04", "--json"]);
    expect(JSON.parse(stdout).days).toEqual([
      {
        sourceId: "web",
        day: "2026-03-04",
        accepted: 4,
        filtered: 1,
        rejected: 2,
        // proto3 JSON leaves out zeros.
        destinations: [{ destinationId: "hook", delivered: 3, filtered: 1, failed: 4 }],
      },
    ]);
    expect((await cli(["usage", "--to", "2026-02-01"])).stdout).toBe("no usage in these days\n");
    expect(await cli(["usage", "--from", "last-week"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--from: must be a day as YYYY-MM-DD, got "last-week"'),
    });
    expect(await cli(["usage", "--from", "2026-03-05", "--to", "2026-03-04"])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("INVALID_ARGUMENT: from_day: must not be after to_day"),
    });
  });

  it("reaches InsightsService through `switchyard call` too", async () => {
    const { code, stdout } = await cli([
      "call",
      "InsightsService/GetUsage",
      '{"sourceId":"web","fromDay":"2026-03-04","toDay":"2026-03-04"}',
    ]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout).days[0].accepted).toBe(4);
  });
});
