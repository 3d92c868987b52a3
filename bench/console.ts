/**
 * Console benchmark: `npm run bench:console [-- --runs N]`.
 *
 * - First page ready: how long the overview takes in Chromium (/usr/bin/chromium, driven by
 *   playwright-core) from the start of navigation until its figures are on screen (the page
 *   loaded, its script ran, the session was checked, the live view connected and its first
 *   snapshot rendered), against the real console serving the real suite (nats-server, ingest,
 *   delivery, audience-sync, all in this process) on loopback, with a few sources, destinations
 *   and calls. Every run is a fresh browser context, so nothing is cached. Also the sign-in
 *   page (not signed in) the same way. Target: under 1 s (median).
 * - Bundle size: the web app's script and stylesheet as the console serves them, gzipped.
 *   Target: under 300 KB.
 *
 * Results: bench/results/console-latest.json.
 */
import { gzipSync } from "node:zlib";
import { readdir, readFile } from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { chromium, type Browser } from "playwright-core";
// @ts-expect-error: plain JavaScript build script, no declarations.
import { buildConsoleWeb } from "@switchyard/console/build-web";
import { ADMIN_TOKEN, startConsoleFixture } from "@switchyard/testkit/fixtures/console";
import { machineFacts, percentile, runBenchmark, writeResults } from "./lib/run-support.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const TARGET_READY_MS = 1_000;
const TARGET_BUNDLE_GZIP_BYTES = 300 * 1024;

/** Records, in the page, when a selector first matches: ms since the navigation started. */
function readyMarker(selector: string): string {
  return `(() => {
    const check = () => {
      if (window.__ready === undefined && document.querySelector(${JSON.stringify(selector)})) window.__ready = performance.now();
    };
    new MutationObserver(check).observe(document, { childList: true, subtree: true, characterData: true });
  })();`;
}

/** When the page was ready, and where the time went: the HTML's arrival and the document parsed (its script run). */
interface Timing {
  readyMs: number;
  htmlMs: number;
  domContentLoadedMs: number;
}

async function timeFirstPage(browser: Browser, url: string, selector: string, cookie?: { name: string; value: string }): Promise<Timing> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  try {
    if (cookie) await context.addCookies([{ ...cookie, url }]);
    await context.addInitScript(readyMarker(selector));
    const page = await context.newPage();
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForSelector(selector, { timeout: 10_000 });
    return (await page.evaluate(`(() => {
      const navigation = performance.getEntriesByType("navigation")[0];
      return { readyMs: window.__ready, htmlMs: navigation.responseEnd, domContentLoadedMs: navigation.domContentLoadedEventEnd };
    })()`)) as Timing;
  } finally {
    await context.close();
  }
}

function summary(timings: Timing[]) {
  const values = timings.map((timing) => timing.readyMs);
  const sorted = [...values].sort((a, b) => a - b);
  const median = (pick: (timing: Timing) => number) =>
    round(
      percentile(
        [...timings.map(pick)].sort((a, b) => a - b),
        50,
      ),
    );
  return {
    medianMs: round(percentile(sorted, 50)),
    p95Ms: round(percentile(sorted, 95)),
    minMs: round(sorted[0]!),
    maxMs: round(sorted.at(-1)!),
    // Where the time goes: until the HTML arrived, until the document was parsed and its script had run (medians).
    medianHtmlMs: median((timing) => timing.htmlMs),
    medianDomContentLoadedMs: median((timing) => timing.domContentLoadedMs),
    runsMs: values.map(round),
  };
}
const round = (n: number) => Math.round(n * 10) / 10;

runBenchmark(async (cleanup) => {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "20" } } });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs: must be a positive integer");
  const loadAverageAtStart = os.loadavg();

  // Bundle size, as built for production.
  const webDir = await mkdtemp(join(os.tmpdir(), "switchyard-bench-console-web-"));
  cleanup.add("remove the built web app", () => rm(webDir, { recursive: true, force: true }));
  await buildConsoleWeb({ outdir: webDir });
  const files: Record<string, { bytes: number; gzipBytes: number }> = {};
  for (const name of await readdir(webDir)) {
    const body = await readFile(join(webDir, name));
    files[name.replace(/-[A-Z0-9]{8}\./, ".")] = { bytes: body.length, gzipBytes: gzipSync(body, { level: 9 }).length };
  }
  const bundleGzipBytes = Object.entries(files)
    .filter(([name]) => /\.(js|css)$/.test(name))
    .reduce((sum, [, size]) => sum + size.gzipBytes, 0);
  console.log(
    `bundle: ${Object.entries(files)
      .map(([name, size]) => `${name} ${(size.bytes / 1024).toFixed(1)} KB (${(size.gzipBytes / 1024).toFixed(1)} KB gzipped)`)
      .join(
        ", ",
      )}; script and style ${(bundleGzipBytes / 1024).toFixed(1)} KB gzipped (target < 300 KB: ${bundleGzipBytes < TARGET_BUNDLE_GZIP_BYTES ? "met" : "NOT met"})`,
  );

  const fixture = await startConsoleFixture();
  cleanup.add("stop the suite", () => fixture.dispose());
  // Something to show: sources, destinations connected to them, and calls.
  const signIn = await fetch(`${fixture.url}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: fixture.url },
    body: JSON.stringify({ secret: ADMIN_TOKEN }),
  });
  const session = (await signIn.json()) as { csrfToken: string };
  const cookieText = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
  const [cookieName, cookieValue] = [cookieText.slice(0, cookieText.indexOf("=")), cookieText.slice(cookieText.indexOf("=") + 1)];
  const rpc = async (method: string, body: object) => {
    const response = await fetch(`${fixture.url}/api/switchyard.v1.${method}`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: fixture.url, cookie: cookieText, "x-csrf-token": session.csrfToken },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  };
  for (let d = 0; d < 3; d++)
    await rpc("ConfigService/PutDestination", {
      destination: { id: `bench-hook-${d}`, enabled: true, webhooks: [{ url: `http://127.0.0.1:9/hook-${d}` }] },
    });
  for (let s = 0; s < 5; s++) {
    const created = await rpc("ConfigService/CreateSource", { id: `bench-source-${s}` });
    await rpc("ConfigService/Connect", { sourceId: `bench-source-${s}`, destinationId: `bench-hook-${s % 3}` });
    const writeKey = created.writeKey as string;
    await fetch(`${fixture.ingestHttpUrl}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ batch: Array.from({ length: 50 }, (_, i) => ({ type: "track", event: "Bench", userId: `u${i}` })) }),
    });
  }

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  cleanup.add("close Chromium", () => browser.close());
  const cookie = { name: cookieName, value: cookieValue };
  // One untimed run of each warms the server side (first gRPC channel, first snapshot), as any later visitor finds it.
  await timeFirstPage(browser, fixture.url, ".tiles", cookie);
  await timeFirstPage(browser, fixture.url, "form button[type=submit]");
  const overview: Timing[] = [];
  const signInPage: Timing[] = [];
  for (let i = 0; i < runs; i++) {
    overview.push(await timeFirstPage(browser, fixture.url, ".tiles", cookie));
    signInPage.push(await timeFirstPage(browser, fixture.url, "form button[type=submit]"));
  }
  const overviewSummary = summary(overview);
  const signInSummary = summary(signInPage);
  console.log(
    `first page ready (overview with its figures, signed in, cold browser cache): median ${overviewSummary.medianMs} ms, p95 ${overviewSummary.p95Ms} ms ` +
      `(${runs} runs; HTML at ${overviewSummary.medianHtmlMs} ms, parsed and script run at ${overviewSummary.medianDomContentLoadedMs} ms; ` +
      `target < ${TARGET_READY_MS} ms: ${overviewSummary.medianMs < TARGET_READY_MS ? "met" : "NOT met"}; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores)`,
  );
  console.log(`sign-in page ready: median ${signInSummary.medianMs} ms, p95 ${signInSummary.p95Ms} ms`);

  const nc = await connect({ servers: fixture.nats.url });
  cleanup.add("close the NATS connection", () => nc.close());
  const file = await writeResults(RESULTS_DIR, "console", {
    benchmark: "console",
    runs,
    targets: { firstPageReadyMs: TARGET_READY_MS, bundleGzipBytes: TARGET_BUNDLE_GZIP_BYTES },
    results: {
      firstPageReady: { page: "overview, signed in, fresh browser context", ...overviewSummary },
      signInPageReady: { page: "sign-in, fresh browser context", ...signInSummary },
      bundle: { files, scriptAndStyleGzipBytes: bundleGzipBytes },
      met: { firstPageReady: overviewSummary.medianMs < TARGET_READY_MS, bundleSize: bundleGzipBytes < TARGET_BUNDLE_GZIP_BYTES },
    },
    setup: "console, ingest, delivery, audience-sync in one process with a nats-server, on loopback; 5 sources, 3 destinations, 250 calls",
    machine: { ...(await machineFacts(REPO_ROOT, nc, loadAverageAtStart)), chromium: browser.version() },
  });
  console.log(`results: ${file}`);
});
