import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { credentials, Metadata } from "@grpc/grpc-js";
import { Analytics } from "@switchyard/analytics";
import { AudienceServiceClient, SyncAudienceIncrementRequest } from "@switchyard/contracts";
import { waitFor, WebhookReceiver } from "@switchyard/testkit";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startConsoleFixture, type ConsoleFixture } from "@switchyard/testkit/fixtures/console";

/**
 * The console in a real headless Chromium against the real suite (nats-server, ingest,
 * delivery, audience-sync, the console) and a loopback receiver: sign in, create a source and
 * a destination (each form showing the service's error next to the field first), connect them,
 * watch calls arrive in the live debugger, see the destination failing on the overview, replay
 * its dead letters once the receiver is back, see an audience sync, block a track event on the
 * source's schema page (and see it counted as filtered), set a rate limit and a connection
 * filter (each refused value's error next to its input), and read the attempt log. Each page is
 * screenshotted into test/e2e/screenshots/ (git-ignored); with UPDATE_DOCS_SCREENSHOTS=1 the
 * overview also goes to docs/images/console-overview.png, which the README shows.
 */

const CHROMIUM = "/usr/bin/chromium";
/** As in browser-sdk.test.ts: without these Chromium hangs on this machine's blocked network. */
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
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SCREENSHOTS = join(ROOT, "test/e2e/screenshots");
const LONG = 30_000;

let receiver: WebhookReceiver;
let fixture: ConsoleFixture;
let userDataDir: string;
let browser: BrowserContext;
let page: Page;
let receiverUp = true;
/** Message ids the receiver answered 200 for. */
const delivered = new Set<string>();
const pageProblems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is needed at ${CHROMIUM} for this test: apt-get install -y chromium (.ci/run installs it)`);
  await mkdir(SCREENSHOTS, { recursive: true });
  receiver = await WebhookReceiver.start();
  receiver.respond((request) => {
    if (!receiverUp) return { status: 503 };
    if (request.json?.messageId) delivered.add(request.json.messageId);
    return { status: 200 };
  });
  fixture = await startConsoleFixture({
    // The schema page and usage read InsightsService.
    insights: true,
    // A short retry window, so a failing destination's calls are dead letters within seconds.
    deliveryEnv: {
      DELIVERY_RETRY_WINDOW_MS: "3000",
      DELIVERY_RETRY_BASE_DELAY_MS: "200",
      DELIVERY_RETRY_MAX_DELAY_MS: "500",
      DELIVERY_FAILURE_THRESHOLD: "3",
      DELIVERY_FAILING_COOLDOWN_MS: "300",
    },
  });
  userDataDir = await mkdtemp(join(tmpdir(), "switchyard-console-chromium-"));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 860 },
  });
  page = await browser.newPage();
  page.on("pageerror", (error) => pageProblems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/status of (401|400|403|409)/.test(message.text())) pageProblems.push(`console: ${message.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await fixture?.dispose();
  await receiver?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `console-${name}.png`), fullPage: true });
}

async function go(title: string): Promise<void> {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: title, exact: true }).click();
}

/** Sends track calls through ingest's Segment HTTP API, as a backend would. */
async function sendTrack(writeKey: string, events: { event: string; userId: string; properties?: object }[]): Promise<void> {
  const response = await fetch(`${fixture.ingestHttpUrl}/v1/batch`, {
    method: "POST",
    headers: { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" },
    body: JSON.stringify({ batch: events.map((call) => ({ type: "track", ...call })) }),
  });
  expect(response.status).toBe(200);
}

/** Clicks `button` (a Refresh) until `check` holds: the pages read on demand, not live. */
async function refreshUntil(what: string, button: string, check: () => Promise<boolean>): Promise<void> {
  await waitFor(
    what,
    async () => {
      if (await check()) return true;
      await page.getByRole("button", { name: button, exact: true }).click();
      return false;
    },
    { timeoutMs: LONG, intervalMs: 300 },
  );
}

/** The error message tied to an input (aria-describedby), as a screen reader reads it out. */
async function fieldError(input: Locator): Promise<string> {
  const ids = ((await input.getAttribute("aria-describedby")) ?? "").split(" ").filter((id) => id.endsWith("-error"));
  return ids[0] ? ((await page.locator(`[id="${ids[0]}"]`).textContent()) ?? "") : "";
}

const countIn = async (cell: Locator) => Number(((await cell.textContent()) ?? "0").replace(/[^0-9]/g, ""));

describe("the console in a browser", () => {
  let writeKey = "";

  it("refuses a wrong password and signs in with the admin token", async () => {
    await page.goto(fixture.url);
    const secret = page.getByLabel("Admin token or password");
    await secret.fill("not-the-admin-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("Wrong admin token or password.").waitFor();
    expect(await secret.getAttribute("aria-invalid")).toBe("true");
    await screenshot("sign-in");

    await secret.fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    // Keyboard users get a skip link first on a freshly loaded page.
    await page.reload();
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.textContent")).toBe("Skip to content");
  });

  it("creates a source, showing the field's error first, and its write key once", async () => {
    await go("Sources");
    await page.getByRole("heading", { name: "Sources", level: 1 }).waitFor();
    const id = page.getByLabel("Id", { exact: true });
    await id.fill("not valid!");
    await page.getByRole("button", { name: "Create source" }).click();
    const error = page.locator(".field.invalid .field-error");
    await error.waitFor();
    expect(await error.textContent()).toContain("must be 1-64 letters, digits, '-' or '_'");
    expect(await id.getAttribute("aria-invalid")).toBe("true");
    await screenshot("sources-error");

    await id.fill("shop");
    await page.getByLabel("Name (optional)").fill("Shop backend");
    await page.getByRole("button", { name: "Create source" }).click();
    const key = page.getByLabel("Write key of shop (shown only now)");
    await key.waitFor();
    writeKey = await key.inputValue();
    expect(writeKey).toMatch(/^wk_/);
    await page.getByRole("row", { name: /shop/ }).waitFor();
    await screenshot("sources");
    await page.getByRole("button", { name: "I have stored it" }).click();
    expect(await page.getByLabel("Write key of shop (shown only now)").count()).toBe(0);
    // Shown once: a reload does not bring it back, and the list never holds it.
    await page.reload();
    await page.getByRole("row", { name: /shop/ }).waitFor();
    expect(await page.content()).not.toContain(writeKey);
  });

  it("sets up a webhook destination, showing the URL's error next to it, and connects the source", async () => {
    await go("Destinations");
    await page.getByRole("link", { name: "Set up Webhooks", exact: true }).click();
    await page.getByRole("heading", { name: "New Webhooks destination" }).waitFor();
    await page.getByLabel("Id", { exact: true }).fill("hook");
    const url = page.getByLabel("URL 1", { exact: true });
    await url.fill("ftp://files.example.com/drop");
    await page.getByLabel("Shared secret (X-Signature)").fill("console-e2e-shared-secret");
    await page.getByLabel("shop (Shop backend)").check();
    await page.getByRole("button", { name: "Create destination" }).click();
    const error = page.locator(".field.invalid .field-error");
    await error.waitFor();
    expect(await url.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(".field.invalid label").first().textContent()).toBe("URL 1");
    await screenshot("destination-error");

    await url.fill(receiver.url("/hook"));
    await page.getByRole("button", { name: "Add a header" }).click();
    await page.getByLabel("Header name 1").fill("X-Api-Key");
    await page.getByLabel("Header value 1").fill("console-e2e-header-value");
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByText("Destination hook saved.").waitFor();
    const row = page.getByRole("row", { name: /hook/ });
    expect(await row.textContent()).toContain("shop");
    expect(await row.textContent()).toContain("X-Signature");
    await screenshot("destinations");

    // Editing shows no secret back: the header value is a fingerprint, the secret field is empty.
    await page.getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit hook" }).waitFor();
    expect(await page.getByLabel("Header value 1").inputValue()).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(await page.getByLabel("Shared secret (X-Signature)").inputValue()).toBe("");
    expect(await page.content()).not.toContain("console-e2e-shared-secret");
    await screenshot("destination-edit");
    await page.getByRole("link", { name: "Cancel" }).click();
  });

  it("shows the source's calls in the live debugger as they arrive: searchable and pausable", async () => {
    await go("Live debugger");
    await page.getByLabel("Source").selectOption("shop");
    await page.getByText("Listening to shop").waitFor({ timeout: LONG });
    await sendTrack(writeKey, [
      { event: "Order Completed", userId: "ada", properties: { revenue: 42 } },
      { event: "Signed Up", userId: "grace" },
    ]);
    await page.locator("tr.call-row", { hasText: "Order Completed" }).waitFor({ timeout: LONG });
    await page.locator("tr.call-row", { hasText: "Signed Up" }).waitFor();
    await page.locator("tr.call-row", { hasText: "Order Completed" }).getByRole("button", { name: "Show" }).click();
    expect(await page.locator("pre.json").textContent()).toContain('"revenue": 42');
    await screenshot("debugger");

    await page.getByLabel("Search").fill("grace");
    await waitFor("the search to narrow the list", async () => (await page.locator("tr.call-row").count()) === 1);
    await page.getByLabel("Search").fill("");

    await page.getByRole("button", { name: "Pause" }).click();
    await sendTrack(writeKey, [{ event: "While Paused", userId: "ada" }]);
    await page.getByRole("button", { name: "Resume (1 new)" }).waitFor({ timeout: LONG });
    expect(await page.locator("tr.call-row", { hasText: "While Paused" }).count()).toBe(0);
    await page.getByRole("button", { name: "Resume (1 new)" }).click();
    await page.locator("tr.call-row", { hasText: "While Paused" }).waitFor();
    await waitFor("the calls at the receiver", () => receiver.requests.length >= 3, { timeoutMs: LONG });
  });

  it("shows the destination failing on the overview while its receiver fails", async () => {
    receiverUp = false;
    await sendTrack(
      writeKey,
      Array.from({ length: 12 }, (_, i) => ({ event: "Checkout Failed", userId: `user-${i}` })),
    );
    await go("Overview");
    await page.locator("tr.row-bad", { hasText: "hook" }).waitFor({ timeout: 60_000 });
    await page.getByRole("heading", { name: "Failing destinations" }).waitFor();
    // The short retry window makes the failed calls dead letters within seconds.
    await page.locator(".tile.warn").waitFor({ timeout: LONG });
    await screenshot("overview");
    if (process.env.UPDATE_DOCS_SCREENSHOTS === "1") {
      await mkdir(join(ROOT, "docs/images"), { recursive: true });
      await page.screenshot({ path: join(ROOT, "docs/images/console-overview.png") });
    }
  }, 120_000);

  it("replays the dead letters once the receiver is back", async () => {
    await go("Dead letters");
    await page.getByLabel("Destination").selectOption("hook");
    await waitFor(
      "all 12 dead letters listed",
      async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        return (await page.locator("table.dead-letters tbody tr").count()) === 12;
      },
      { timeoutMs: LONG, intervalMs: 500 },
    );
    await page.locator("table.dead-letters tbody tr").first().getByRole("button", { name: "Inspect" }).click();
    expect(await page.locator("pre.json").textContent()).toContain("Checkout Failed");
    await screenshot("dead-letters");

    receiverUp = true;
    const failedIds = new Set(receiver.requests.filter((r) => r.json?.event === "Checkout Failed").map((r) => r.json.messageId as string));
    expect(failedIds.size).toBe(12);
    // One, then the rest as a selection.
    await page.locator("table.dead-letters tbody tr").first().getByRole("button", { name: "Replay" }).click();
    await page.getByText("Replayed 1 dead letter").waitFor();
    await page.getByLabel("Select every dead letter shown").check();
    await page.getByRole("button", { name: "Replay selected (11)" }).click();
    await page.getByText("Replayed 11 selected dead letters").waitFor();
    await page.getByText("No dead letters for hook.").waitFor();
    await waitFor("the 12 replayed calls delivered", () => [...failedIds].every((id) => delivered.has(id)), { timeoutMs: LONG });
    // With the destination's static header.
    expect(receiver.requests.at(-1)!.headers["x-api-key"]).toBe("console-e2e-header-value");
  }, 120_000);

  it("lists an audience with its last sync", async () => {
    const client = new AudienceServiceClient(`127.0.0.1:${fixture.audienceSync.grpcPort}`, credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${ADMIN_TOKEN}`);
    await new Promise((resolve, reject) =>
      client.syncAudienceIncrement(
        SyncAudienceIncrementRequest.fromPartial({
          header: { sourceId: "shop", name: "High Value Users", syncId: "hvu-2026-01", expectedCount: 0 },
          addedUserIds: ["ada", "grace"],
        }),
        metadata,
        (error, response) => (error ? reject(error) : resolve(response)),
      ),
    );
    client.close();
    await go("Audiences");
    const row = page.getByRole("row", { name: /High Value Users/ });
    await row.waitFor();
    const text = (await row.textContent()) ?? "";
    expect(text).toContain("high_value_users");
    expect(text).toContain("hvu-2026-01");
    expect(text).toContain("increment");
    await screenshot("audiences");
  });

  it("blocks a track event on the schema page with one click, counts it as filtered, and unblocks it", async () => {
    await go("Sources");
    await page.getByRole("row", { name: /shop/ }).getByRole("link", { name: "Schema" }).click();
    await page.getByRole("heading", { name: "Schema of shop", level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/sources/shop/schema");
    const row = page.locator("table.schema tbody tr", { hasText: "Order Completed" });
    await refreshUntil("Order Completed in the schema", "Refresh", async () => (await row.count()) === 1);
    // Its property key with its JSON type.
    expect(await row.locator("ul.keys").textContent()).toContain("revenue number");

    await row.getByRole("button", { name: "Block Order Completed" }).click();
    await page.getByText("Blocked Order Completed: new calls are accepted but forwarded nowhere.").waitFor();
    await row.getByText("Blocked", { exact: true }).waitFor();
    expect(await row.getAttribute("class")).toContain("row-blocked");

    // Sent with the client library; ingest applies a block within a second, so one is sent per
    // try until the schema counts one as filtered.
    const analytics = new Analytics(writeKey, { endpoint: `127.0.0.1:${fixture.ingest.grpcPort}`, flushAt: 1 });
    try {
      await waitFor(
        "a blocked Order Completed counted as filtered",
        async () => {
          if ((await countIn(row.locator("td.filtered"))) >= 1) return true;
          analytics.track({ userId: "ada", event: "Order Completed", properties: { revenue: 7 } });
          await analytics.flush();
          await page.getByRole("button", { name: "Refresh", exact: true }).click();
          return false;
        },
        { timeoutMs: LONG, intervalMs: 500 },
      );
    } finally {
      await analytics.close();
    }
    // The day's usage counts it as filtered at the source too (newest day first).
    const today = page.locator("table.usage tbody tr").first();
    await refreshUntil(
      "today's usage with the filtered call",
      "Refresh",
      async () => (await today.count()) === 1 && (await countIn(today.locator("td.filtered"))) >= 1,
    );
    expect(await countIn(today.locator("td.accepted"))).toBeGreaterThanOrEqual(await countIn(today.locator("td.filtered")));
    await screenshot("schema");
    // A day the service refuses: its message next to the field.
    const fromDay = page.getByLabel("From day");
    await fromDay.fill("2026-13-01");
    await page.getByRole("button", { name: "Show usage" }).click();
    await waitFor("from day marked", async () => (await fromDay.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
    expect(await fieldError(fromDay)).not.toBe("");
    await fromDay.fill("");
    await page.getByRole("button", { name: "Show usage" }).click();
    await waitFor("from day accepted", async () => (await fromDay.getAttribute("aria-invalid")) === "false", { timeoutMs: LONG });

    await row.getByRole("button", { name: "Unblock Order Completed" }).click();
    await page.getByText("Unblocked Order Completed.").waitFor();
    await waitFor("the row no longer marked", async () => !((await row.getAttribute("class")) ?? "").includes("row-blocked"), {
      timeoutMs: LONG,
    });

    // A whole call type, the same way.
    const pages = page.locator("table.call-types tbody tr", { hasText: "page" }).first();
    await page.getByRole("button", { name: "Block all page calls" }).click();
    await pages.getByText("Blocked", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Unblock all page calls" }).click();
    await pages.getByText("Forwarded", { exact: true }).waitFor();
  }, 120_000);

  it("sets a rate limit and a connection filter, showing a refused value's error next to its input", async () => {
    await go("Destinations");
    await page.getByRole("row", { name: /hook/ }).getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit hook" }).waitFor();
    const rate = page.getByLabel("Rate limit (requests per second)");
    await rate.fill("1000000");
    const filter = page.getByRole("group", { name: "Filter of shop" });
    await filter.getByLabel("Calls matching conditions").check();
    await filter.getByLabel("Path 1").fill("properties.revenue");
    await filter.getByLabel("Test 1").selectOption("greaterThan");
    await filter.getByLabel("Value 1").fill("10");
    await filter.getByRole("button", { name: "Add a condition" }).click();
    const path2 = filter.getByLabel("Path 2");
    await path2.fill("revenue");
    await filter.getByLabel("Test 2").selectOption("exists");
    await page.getByRole("button", { name: "Save changes" }).click();

    // The service refuses the rate limit first: its message is next to the input, which takes the focus.
    await waitFor("the rate limit marked", async () => (await rate.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
    expect(await fieldError(rate)).toContain("from 1 to 100000");
    // The form focuses the first field in error on the frame after it renders the errors.
    await waitFor(
      "the rate limit focused",
      async () => (await page.evaluate("document.activeElement?.getAttribute('name')")) === "maxRequestsPerSecond",
      {
        timeoutMs: LONG,
      },
    );
    await screenshot("destination-rate-error");

    // Then the filter: the service names filter.all.filters.1.field.path, shown at Path 2.
    await rate.fill("50");
    await page.getByRole("button", { name: "Save changes" }).click();
    await waitFor("path 2 marked", async () => (await path2.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
    expect(await fieldError(path2)).toContain('must be "type"');
    expect(await filter.getByLabel("Path 1").getAttribute("aria-invalid")).toBe("false");
    await screenshot("destination-filter-error");

    await path2.fill("type");
    await filter.getByLabel("Test 2").selectOption("equals");
    await filter.getByLabel("Value 2").fill("track");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Destination hook saved.").waitFor();
    const row = page.getByRole("row", { name: /hook/ });
    // The list is read again after the save.
    await waitFor(
      "the limit and the filter listed",
      async () => {
        const text = (await row.textContent()) ?? "";
        return text.includes("50/s") && text.includes("(filtered)");
      },
      { timeoutMs: LONG },
    );

    // Read back: the builder holds the conditions, the JSON view the same filter.
    await row.getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit hook" }).waitFor();
    expect(await rate.inputValue()).toBe("50");
    expect(await filter.getByLabel("Path 1").inputValue()).toBe("properties.revenue");
    expect(await filter.getByLabel("Value 2").inputValue()).toBe("track");
    await screenshot("destination-filter");
    await filter.getByLabel("Filter as JSON (nested)").check();
    const json = filter.getByLabel("Filter of shop as JSON");
    expect(JSON.parse(await json.inputValue())).toEqual({
      all: {
        filters: [{ field: { path: "properties.revenue", greaterThan: 10 } }, { field: { path: "type", equals: "track" } }],
      },
    });
    // A nested filter's error names its path, next to the JSON.
    await json.fill(
      '{"not": {"any": {"filters": [{"field": {"path": "event", "equals": "Ping"}}, {"field": {"path": "bogus", "exists": true}}]}}}',
    );
    await page.getByRole("button", { name: "Save changes" }).click();
    await waitFor("the JSON marked", async () => (await json.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
    expect(await fieldError(json)).toContain("not.any.filters.1.field.path");

    // A nested filter stays JSON: the builder would lose it.
    await filter.getByLabel("Calls matching conditions").click();
    await filter.getByText("This filter is not a flat list of conditions").waitFor();
    expect(await filter.getByLabel("Filter as JSON (nested)").isChecked()).toBe(true);
    expect(await json.inputValue()).toContain('"not"');

    // All calls again (and no limit), so the steps after this one see every call delivered.
    await filter.getByLabel("All calls").check();
    await rate.fill("");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Destination hook saved.").waitFor();
    await waitFor("no filter listed", async () => !((await row.textContent()) ?? "").includes("(filtered)"), { timeoutMs: LONG });
  }, 120_000);

  it("lists delivery attempts, newest first, a page at a time, and opens one with masked header values", async () => {
    await go("Destinations");
    await page.getByRole("row", { name: /hook/ }).getByRole("link", { name: "Deliveries" }).click();
    await page.getByRole("heading", { name: "Deliveries", level: 1 }).waitFor();
    expect(new URL(page.url()).search).toBe("?destination=hook");
    const rows = page.locator("table.attempts tbody tr.attempt-row");
    await rows.first().waitFor({ timeout: LONG });
    expect(await rows.count()).toBe(25);
    // Newest first.
    const times = (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-at") ?? ""))).map((at) => Date.parse(at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // Older and newer pages (the earlier steps made more than 25 attempts: 12 calls failed, dead-lettered and replayed).
    await page.getByRole("button", { name: "Older" }).click();
    await page.getByText("Page 2").waitFor();
    await page.getByRole("button", { name: "Newer" }).click();
    await page.getByText("Page 1").waitFor();

    // A time range the service refuses: its message next to the field it names.
    const since = page.getByLabel("Since");
    await since.fill("2099-01-02T00:00:00");
    await page.getByLabel("Before").fill("2099-01-01T00:00:00");
    await page.getByRole("button", { name: "Show attempts" }).click();
    await waitFor("since marked", async () => (await since.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
    expect(await fieldError(since)).toContain("must be earlier than before");
    await page.getByLabel("Before").fill("");
    await page.getByRole("button", { name: "Show attempts" }).click();
    await page.getByText("No attempts for hook with these filters.").waitFor();
    await since.fill("");

    // Only delivered ones; the newest one's detail.
    await page.getByLabel("Delivered").check();
    await page.getByRole("button", { name: "Show attempts" }).click();
    await waitFor(
      "only delivered attempts",
      async () => {
        const texts = await rows.locator("td:nth-child(2)").allTextContents();
        return texts.length > 0 && texts.every((text) => text === "Delivered");
      },
      { timeoutMs: LONG },
    );
    await rows.first().getByRole("button", { name: "Details" }).click();
    const detail = page.locator(".attempt-detail");
    await detail.waitFor();
    const header = detail.getByRole("row", { name: /x-api-key/i });
    await header.waitFor();
    expect(await header.locator("td").textContent()).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(await detail.textContent()).toContain("Status 200");
    expect(await detail.getByLabel("Request body").textContent()).toContain('"messageId"');
    expect(await page.content()).not.toContain("console-e2e-header-value");
    await screenshot("deliveries");
  }, 120_000);

  it("signs out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Admin token or password").waitFor();
    expect(pageProblems).toEqual([]);
  });
});
