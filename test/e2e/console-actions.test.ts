import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor, WebhookReceiver, type ReceivedRequest } from "@switchyard/testkit";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startConsoleFixture, type ConsoleFixture } from "@switchyard/testkit/fixtures/console";

/**
 * The Webhooks (Actions) mapping editor in a real headless Chromium against the real suite and
 * a loopback receiver: create a destination with two mappings (a PUT to a templated URL with a
 * header mapped from the call, and a batching one), see JSON that does not parse and an invalid
 * trigger refused at their fields, save it connected to a source, read it back after a reload
 * (secrets and static header values never shown), preview a mapping against a call and send it
 * once to the receiver, then send a real call through ingest and see both mappings' requests
 * arrive, and the editor offer that call to test with. An Actions destination made through the
 * API opens in this editor, never in the Webhooks form. Screenshots go to test/e2e/screenshots/.
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
const SHARED_SECRET = "actions-e2e-shared-secret";
const AUTHORIZATION = "Bearer actions-e2e-receiver-token";

let receiver: WebhookReceiver;
let fixture: ConsoleFixture;
let userDataDir: string;
let browser: BrowserContext;
let page: Page;
const pageProblems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is needed at ${CHROMIUM} for this test: apt-get install -y chromium (.ci/run installs it)`);
  await mkdir(SCREENSHOTS, { recursive: true });
  receiver = await WebhookReceiver.start();
  receiver.respond(() => ({
    status: 200,
    headers: { "content-type": "application/json", "x-receiver": "e2e" },
    body: '{"received":true}',
  }));
  fixture = await startConsoleFixture();
  userDataDir = await mkdtemp(join(tmpdir(), "switchyard-console-actions-chromium-"));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  page = await browser.newPage();
  page.on("pageerror", (error) => pageProblems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/status of (400|401)/.test(message.text())) pageProblems.push(`console: ${message.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await fixture?.dispose();
  await receiver?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `console-actions-${name}.png`), fullPage: true });
}

async function go(title: string): Promise<void> {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: title, exact: true }).click();
}

/** The error message tied to an input (aria-describedby), as a screen reader reads it out. */
async function fieldError(input: Locator): Promise<string> {
  const ids = ((await input.getAttribute("aria-describedby")) ?? "").split(" ").filter((id) => id.endsWith("-error"));
  return ids[0] ? ((await page.locator(`[id="${ids[0]}"]`).textContent()) ?? "") : "";
}

async function marked(what: string, input: Locator): Promise<void> {
  await waitFor(what, async () => (await input.getAttribute("aria-invalid")) === "true", { timeoutMs: LONG });
}

/** One mapping's fieldset in the editor. */
const mapping = (number: number) => page.getByRole("group", { name: `Mapping ${number}`, exact: true });

/** ConfigService through the console's API, as a script would call it: a session of its own. */
async function apiCall(method: string, body: unknown): Promise<any> {
  const session = await fetch(`${fixture.url}/api/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: fixture.url },
    body: JSON.stringify({ secret: ADMIN_TOKEN }),
  });
  const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0]!;
  const { csrfToken } = (await session.json()) as { csrfToken: string };
  const answer = await fetch(`${fixture.url}/api/switchyard.v1.ConfigService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: fixture.url, cookie, "x-csrf-token": csrfToken },
    body: JSON.stringify(body),
  });
  const json = await answer.json();
  expect(answer.status, JSON.stringify(json)).toBe(200);
  return json;
}

/** The receiver's requests to `path` whose JSON body passes `check`. */
const arrived = (path: string, check: (request: ReceivedRequest) => boolean) =>
  receiver.requests.filter((request) => request.path === path && check(request));

describe("the Webhooks (Actions) mapping editor in a browser", () => {
  let writeKey = "";
  const ordersUrl = () => `{"@template": "${receiver.url("/users")}/{{userId}}"}`;

  it("signs in and creates a source", async () => {
    await page.goto(fixture.url);
    await page.getByLabel("Admin token or password").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    await go("Sources");
    await page.getByLabel("Id", { exact: true }).fill("shop");
    await page.getByLabel("Name (optional)").fill("Shop backend");
    await page.getByRole("button", { name: "Create source" }).click();
    const key = page.getByLabel("Write key of shop (shown only now)");
    await key.waitFor();
    writeKey = await key.inputValue();
    await page.getByRole("button", { name: "I have stored it" }).click();
  });

  it("creates a destination with two mappings, refusing bad JSON and an invalid trigger at their fields first", async () => {
    await go("Destinations");
    await page.getByRole("link", { name: "Set up Webhooks (Actions)" }).click();
    await page.getByRole("heading", { name: "New Webhooks (Actions) destination" }).waitFor();
    await page.getByLabel("Id", { exact: true }).fill("actions");
    await page.getByLabel("Name (optional)").fill("Orders and tracks");
    await page.getByLabel("Shared secret (X-Signature)").fill(SHARED_SECRET);
    await page.getByLabel("shop (Shop backend)").check();

    // A PUT to a URL made of the call, with a header mapped from it and a static one.
    const first = mapping(1);
    await first.getByLabel("Name", { exact: true }).fill("Orders");
    await first.getByLabel("Trigger").fill('type = "track" and event = "Order Completed"');
    await first.getByLabel("Method").selectOption("PUT");
    await first.getByLabel("URL", { exact: true }).fill(ordersUrl());
    await first.getByRole("button", { name: "Add a header" }).click();
    await first.getByLabel("Header name 1").fill("X-User-Id");
    await first.getByLabel("Header value 1").fill('{"@path": "$.userId"}');
    await first.getByRole("button", { name: "Add a header" }).click();
    await first.getByLabel("Header name 2").fill("Authorization");
    await first.getByLabel("Header value 2").fill(AUTHORIZATION);
    const data = first.getByLabel("Data (JSON)");
    expect(await data.getAttribute("placeholder")).toBe('{"@path": "$."}');
    await data.fill('{"order": {"@path": "$.properties"}, "event": {"@path": "$.event"}');

    // Every track call, batched; its trigger written as Segment's parser would misread it.
    await page.getByRole("button", { name: "Add a mapping" }).click();
    const second = mapping(2);
    await second.getByLabel("Name", { exact: true }).fill("Tracks");
    const trigger = second.getByLabel("Trigger");
    await trigger.fill("type = track");
    await second.getByLabel("URL", { exact: true }).fill(receiver.url("/batch"));
    await second.getByLabel("Send in batches", { exact: false }).check();
    await second.getByLabel("Batch size (calls)").fill("50");
    await second.getByLabel("Longest wait (ms)").fill("300");

    // Mappings are added, reordered and removed.
    await page.getByRole("button", { name: "Add a mapping" }).click();
    expect(await mapping(3).getByLabel("Name", { exact: true }).inputValue()).toBe("Mapping 3");
    await page.getByRole("button", { name: "Remove mapping 3" }).click();
    expect(await mapping(3).count()).toBe(0);
    await page.getByRole("button", { name: "Move mapping 2 up" }).click();
    expect(await mapping(1).getByLabel("Name", { exact: true }).inputValue()).toBe("Tracks");
    expect(await mapping(2).getByLabel("Header name 1").inputValue()).toBe("X-User-Id");
    await page.getByRole("button", { name: "Move mapping 1 down" }).click();
    expect(await mapping(1).getByLabel("Name", { exact: true }).inputValue()).toBe("Orders");

    // JSON that does not parse is refused in the page, at its field.
    await page.getByRole("button", { name: "Create destination" }).click();
    await marked("the data marked", data);
    expect(await fieldError(data)).toContain("Data is not valid JSON");
    await data.fill('{"order": {"@path": "$.properties"}, "event": {"@path": "$.event"}}');

    // The service refuses the trigger: its message (with line and column) at that mapping's trigger.
    await page.getByRole("button", { name: "Create destination" }).click();
    await marked("mapping 2's trigger marked", trigger);
    expect(await fieldError(trigger)).toMatch(/line 1, column \d+/);
    expect(await first.getByLabel("Trigger").getAttribute("aria-invalid")).toBe("false");
    expect(await data.getAttribute("aria-invalid")).toBe("false");
    await screenshot("trigger-error");

    await trigger.fill('type = "track"');
    await page.getByRole("button", { name: "Create destination" }).click();
    await page.getByText("Destination actions saved.").waitFor();
    const row = page.getByRole("row", { name: /actions/ });
    const text = (await row.textContent()) ?? "";
    expect(text).toContain("Webhooks (Actions)");
    expect(text).toContain(`Orders: {"@template":"${receiver.url("/users")}/{{userId}}"}`);
    expect(text).toContain(`Tracks: ${receiver.url("/batch")}`);
    expect(text).toContain("shop");
    expect(text).toContain("X-Signature");
    await screenshot("list");
  });

  it("reads the mappings back as saved after a reload, with no secret in the page", async () => {
    await page.reload();
    await page
      .getByRole("row", { name: /actions/ })
      .getByRole("link", { name: "Edit" })
      .click();
    await page.getByRole("heading", { name: "Edit actions" }).waitFor();
    const first = mapping(1);
    const second = mapping(2);
    expect(await first.getByLabel("Name", { exact: true }).inputValue()).toBe("Orders");
    expect(await first.getByLabel("Trigger").inputValue()).toBe('type = "track" and event = "Order Completed"');
    expect(await first.getByLabel("Method").inputValue()).toBe("PUT");
    expect(JSON.parse(await first.getByLabel("URL", { exact: true }).inputValue())).toEqual(JSON.parse(ordersUrl()));
    expect(await first.getByLabel("Header name 1").inputValue()).toBe("X-User-Id");
    expect(JSON.parse(await first.getByLabel("Header value 1").inputValue())).toEqual({ "@path": "$.userId" });
    // The static value comes back as a fingerprint, which saving sends back as it is.
    expect(await first.getByLabel("Header value 2").inputValue()).toMatch(/^\[set:hmac:[0-9a-f]{8}\]$/);
    expect(JSON.parse(await first.getByLabel("Data (JSON)").inputValue())).toEqual({
      order: { "@path": "$.properties" },
      event: { "@path": "$.event" },
    });
    expect(await first.getByLabel("Send in batches", { exact: false }).isChecked()).toBe(false);
    expect(await second.getByLabel("Trigger").inputValue()).toBe('type = "track"');
    expect(await second.getByLabel("Method").inputValue()).toBe("POST");
    expect(await second.getByLabel("Send in batches", { exact: false }).isChecked()).toBe(true);
    expect(await second.getByLabel("Batch size (calls)").inputValue()).toBe("50");
    expect(await second.getByLabel("Longest wait (ms)").inputValue()).toBe("300");
    expect(await second.getByLabel("Data (JSON)").inputValue()).toBe("");
    expect(await page.getByLabel("Shared secret (X-Signature)").inputValue()).toBe("");
    expect(await page.getByLabel("shop (Shop backend)").isChecked()).toBe(true);
    const html = await page.content();
    expect(html).not.toContain(SHARED_SECRET);
    expect(html).not.toContain(AUTHORIZATION);
    await screenshot("edit");
  });

  it("previews a mapping against a call: the trigger takes it, and the exact request it makes", async () => {
    const requestsBefore = receiver.requests.length;
    // The source has sent nothing yet: the editor offers a sample call.
    const call = page.getByLabel("Test call (JSON)");
    await waitFor("the sample call offered", async () => JSON.parse(await call.inputValue()).event === "Order Completed", {
      timeoutMs: LONG,
    });
    await call.fill(
      JSON.stringify({
        type: "track",
        event: "Order Completed",
        userId: "u-42",
        messageId: "preview-1",
        properties: { total: 12.5, orderId: "o-1" },
      }),
    );
    const first = mapping(1);
    await first.getByRole("button", { name: "Preview" }).click();
    await first.getByText("The trigger takes this call").waitFor();
    expect(await first.getByLabel("Request line").textContent()).toBe(`PUT ${receiver.url("/users/u-42")}`);
    expect(await first.getByLabel("Request body").textContent()).toBe(
      JSON.stringify({ order: { total: 12.5, orderId: "o-1" }, event: "Order Completed" }, null, 2),
    );
    const headers = first.getByRole("table", { name: "Request headers" });
    expect(await headers.getByRole("row", { name: /x-user-id/i }).count()).toBe(1);
    expect(await headers.getByRole("row", { name: /x-signature/i }).count()).toBe(1);
    // A preview sends nothing, and shows no secret.
    expect(receiver.requests.length).toBe(requestsBefore);
    expect(await page.content()).not.toContain(AUTHORIZATION);
    await screenshot("preview");

    // A call the trigger does not take says so.
    await call.fill(JSON.stringify({ type: "track", event: "Cart Viewed", userId: "u-42" }));
    await first.getByRole("button", { name: "Preview" }).click();
    await first.getByText("The trigger does not take this call").waitFor();
  });

  it("sends a test once: the receiver gets the mapped request, and its response is shown", async () => {
    const call = page.getByLabel("Test call (JSON)");
    await call.fill(
      JSON.stringify({ type: "track", event: "Order Completed", userId: "u-43", messageId: "test-send-1", properties: { total: 3 } }),
    );
    const first = mapping(1);
    await first.getByRole("button", { name: "Send test" }).click();
    const [sent] = await waitFor("the test request", () => {
      const found = arrived("/users/u-43", () => true);
      return found.length > 0 && found;
    });
    expect(sent!.method).toBe("PUT");
    expect(JSON.parse(sent!.raw.toString())).toEqual({ order: { total: 3 }, event: "Order Completed" });
    expect(sent!.headers["x-user-id"]).toBe("u-43");
    // The stored header value stands for its mask, and the stored secret signs the test.
    expect(sent!.headers.authorization).toBe(AUTHORIZATION);
    expect(sent!.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/);
    await first.getByLabel("Response status").waitFor();
    expect(await first.getByLabel("Response status").textContent()).toMatch(/^Status 200 in \d+ ms$/);
    expect(JSON.parse((await first.getByLabel("Response body").textContent()) ?? "")).toEqual({ received: true });
    expect(
      await first
        .getByRole("table", { name: "Response headers" })
        .getByRole("row", { name: /x-receiver/ })
        .count(),
    ).toBe(1);
    await screenshot("sent");
  });

  it("delivers a real call through both mappings, and offers it to test with", async () => {
    const response = await fetch(`${fixture.ingestHttpUrl}/v1/batch`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({
        batch: [{ type: "track", event: "Order Completed", userId: "u-7", messageId: "real-1", properties: { total: 99, orderId: "o-7" } }],
      }),
    });
    expect(response.status).toBe(200);
    const [put] = await waitFor(
      "the Orders mapping's request",
      () => {
        const found = arrived("/users/u-7", () => true);
        return found.length > 0 && found;
      },
      { timeoutMs: LONG },
    );
    expect(put!.method).toBe("PUT");
    expect(JSON.parse(put!.raw.toString())).toEqual({ order: { total: 99, orderId: "o-7" }, event: "Order Completed" });
    expect(put!.headers["x-user-id"]).toBe("u-7");
    expect(put!.headers.authorization).toBe(AUTHORIZATION);
    const [batch] = await waitFor(
      "the Tracks mapping's batch",
      () => {
        const found = arrived("/batch", (request) => Array.isArray(request.json) && request.json.some((c) => c?.messageId === "real-1"));
        return found.length > 0 && found;
      },
      { timeoutMs: LONG },
    );
    expect(batch!.method).toBe("POST");
    // No data mapping: each element is the whole call.
    expect(batch!.json[0]).toMatchObject({ type: "track", event: "Order Completed", userId: "u-7", properties: { total: 99 } });

    // The editor follows the source's calls: the newest is offered, and a preview uses it.
    const pick = page.getByLabel("Call", { exact: true });
    await waitFor(
      "the real call offered",
      async () => (await pick.locator("option").allTextContents()).some((label) => label.includes("Order Completed · u-7")),
      { timeoutMs: LONG },
    );
    await pick.selectOption("newest");
    const call = page.getByLabel("Test call (JSON)");
    expect(JSON.parse(await call.inputValue())).toMatchObject({ messageId: "real-1", userId: "u-7" });
    // After a reload too: the newest stored call comes first.
    await page.reload();
    await page.getByRole("heading", { name: "Edit actions" }).waitFor();
    await waitFor("the stored call offered", async () => JSON.parse(await call.inputValue()).messageId === "real-1", {
      timeoutMs: LONG,
    });
    const first = mapping(1);
    await first.getByRole("button", { name: "Preview" }).click();
    await first.getByText("The trigger takes this call").waitFor();
    expect(await first.getByLabel("Request line").textContent()).toBe(`PUT ${receiver.url("/users/u-7")}`);
    await screenshot("recent-call");
  });

  it("shows a test's problems at the mapping's fields", async () => {
    const second = mapping(2);
    const trigger = second.getByLabel("Trigger");
    await trigger.fill('type = "track" and');
    await second.getByRole("button", { name: "Preview" }).click();
    await marked("mapping 2's trigger marked by the test", trigger);
    expect(await fieldError(trigger)).toMatch(/line 1, column \d+/);
    await second.getByText("Not tested", { exact: false }).waitFor();
    await trigger.fill('type = "track"');
    await second.getByRole("button", { name: "Preview" }).click();
    await second.getByText("The trigger takes this call").waitFor();
    expect(await trigger.getAttribute("aria-invalid")).toBe("false");
    await page.getByRole("link", { name: "Cancel" }).click();
  });

  it("opens an Actions destination made through the API in the mapping editor, and saving keeps its kind", async () => {
    await apiCall("PutDestination", {
      destination: {
        id: "api-actions",
        enabled: true,
        webhooksActionsKind: {
          mappings: [{ name: "Identify", enabled: true, trigger: 'type = "identify"', url: receiver.url("/identify"), method: "PATCH" }],
        },
      },
    });
    await page.reload();
    const row = page.getByRole("row", { name: /api-actions/ });
    await row.waitFor();
    expect(await row.textContent()).toContain("Webhooks (Actions)");
    await row.getByRole("link", { name: "Edit" }).click();
    await page.getByRole("heading", { name: "Edit api-actions" }).waitFor();
    expect(await mapping(1).getByLabel("Name", { exact: true }).inputValue()).toBe("Identify");
    expect(await mapping(1).getByLabel("Method").inputValue()).toBe("PATCH");
    expect(await page.getByText("URLs, called in this order").count()).toBe(0);
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Destination api-actions saved.").waitFor();
    const { destination } = await apiCall("GetDestination", { id: "api-actions" });
    expect(destination.webhooksKind).toBeUndefined();
    expect(destination.webhooksActionsKind.mappings).toEqual([
      { name: "Identify", enabled: true, trigger: 'type = "identify"', url: receiver.url("/identify"), method: "PATCH" },
    ]);
    expect(pageProblems).toEqual([]);
  });
});
