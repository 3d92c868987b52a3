import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { WebhookReceiver, waitFor, type ReceivedRequest } from "@switchyard/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../helpers/stack.js";

/**
 * An unmodified analytics.js (@segment/analytics-next's browser bundle) in a real headless
 * Chromium, on a page served from another loopback origin, loading its settings from ingest
 * (cdnURL) and sending there: the calls must reach a webhook receiver with the bodies of docs/contract.md §6.3.
 */

const CHROMIUM = "/usr/bin/chromium";
/** Without these Chromium hangs on this machine's blocked network; none of them changes what a page may do. */
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
const WRITE_KEY = "wk_e2e_browser_sdk_000000001";
const OTHER_SITE_KEY = "wk_e2e_browser_other_site_02";

let receiver: WebhookReceiver;
let stack: Stack;
let site: Server;
let siteOrigin: string;
let userDataDir: string;
let browser: BrowserContext;
const consoleLines: string[] = [];

/** The page: the UMD bundle (window.AnalyticsNext), nothing else, served from this repository's node_modules. */
async function startSite(): Promise<Server> {
  const bundle = await readFile(createRequire(import.meta.url).resolve("@segment/analytics-next/dist/umd/index.js"));
  const html = '<!doctype html><html><head><title>Shop</title><script src="/analytics.js"></script></head><body>Shop</body></html>';
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/analytics.js") {
      response.writeHead(200, { "Content-Type": "text/javascript" });
      response.end(bundle);
    } else if (path === "/" || path === "/pricing") {
      response.writeHead(200, { "Content-Type": "text/html" });
      response.end(html);
    } else if (path === "/favicon.ico") {
      response.writeHead(204).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is needed at ${CHROMIUM} for this test: apt-get install -y chromium (.ci/run installs it)`);
  }
  site = await startSite();
  const address = site.address();
  siteOrigin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  receiver = await WebhookReceiver.start();
  stack = await startStack({
    workspace: {
      sources: [
        { id: "shop-web", writeKeys: [WRITE_KEY], allowedOrigins: [siteOrigin] },
        { id: "elsewhere", writeKeys: [OTHER_SITE_KEY], allowedOrigins: ["https://elsewhere.example"] },
      ],
      destinations: [{ id: "hook", settings: { webhooks: [{ url: receiver.url("/webhooks") }] } }],
      connections: [
        { sourceId: "shop-web", destinationId: "hook" },
        { sourceId: "elsewhere", destinationId: "hook" },
      ],
    },
  });
  userDataDir = await mkdtemp(join(tmpdir(), "switchyard-chromium-"));
  browser = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await stack?.dispose();
  await receiver?.close();
  // Without Chromium, beforeAll stops before the site starts: nothing to close then.
  if (site) await new Promise((resolve) => site.close(resolve));
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function openShop(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("console", (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
  // Ingest's answers explain a failed delivery: they name the field and the rule.
  page.on("response", (response) => {
    if (response.status() >= 400 && response.request().method() !== "OPTIONS") {
      void response.text().then(
        (text) => consoleLines.push(`${response.status()} ${response.request().method()} ${response.url()}: ${text.slice(0, 500)}`),
        () => {},
      );
    }
  });
  await page.goto(`${siteOrigin}${path}`);
  return page;
}

/** The one request that carried this messageId. */
async function arrived(messageId: string): Promise<ReceivedRequest> {
  const found = await waitFor(`the call ${messageId} at the receiver`, () => {
    const requests = receiver.byMessageId(messageId);
    return requests.length > 0 ? requests : undefined;
  });
  expect(found, `requests for ${messageId}`).toHaveLength(1);
  return found[0]!;
}

type Sent = { messageIds: Record<string, string>; failed: string[]; anonymousId: string; settings: unknown };

describe("analytics.js in a real browser", () => {
  it("loads its settings from ingest and delivers page, track, identify, group and alias with the contract's bodies", async () => {
    const page = await openShop("/pricing?plan=pro");
    const sent = await page.evaluate(
      async ({ writeKey, cdnURL }) => {
        const { AnalyticsBrowser } = (globalThis as any).AnalyticsNext;
        const [analytics] = await AnalyticsBrowser.load({ writeKey, cdnURL });
        const contexts: Record<string, any> = {
          page: await analytics.page("Docs", "Pricing", { plan_shown: "pro" }),
          track: await analytics.track("Order Completed", { revenue: 42.5, currency: "EUR" }),
          identify: await analytics.identify("user-42", { email: "ada@example.com", plan: "pro" }),
          group: await analytics.group("acme", { name: "Acme Inc", employees: 120 }),
          alias: await analytics.alias("user-42", "anon-before"),
        };
        const messageIds: Record<string, string> = {};
        const failed: string[] = [];
        for (const [type, ctx] of Object.entries(contexts)) {
          messageIds[type] = ctx.event.messageId;
          if (ctx.failedDelivery()) failed.push(`${type}: ${String(ctx.failedDelivery().reason)}`);
        }
        return { messageIds, failed, anonymousId: analytics.user().anonymousId(), settings: analytics.settings?.cdnSettings };
      },
      { writeKey: WRITE_KEY, cdnURL: stack.httpUrl },
    );
    await page.close();
    const { messageIds, failed, anonymousId } = sent as Sent;
    expect(failed, consoleLines.join("\n")).toEqual([]);

    const common = (request: ReceivedRequest) => {
      expect(request.path).toBe("/webhooks");
      expect(request.json).not.toHaveProperty("writeKey");
      expect(request.json.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(request.json.anonymousId).toBe(anonymousId);
      const context = request.json.context as Record<string, any>;
      expect(context.library).toEqual({ name: "analytics.js", version: expect.stringMatching(/^(npm:)?next-1\./) });
      expect(context.page).toMatchObject({ url: `${siteOrigin}/pricing?plan=pro`, path: "/pricing", title: "Shop" });
      expect(context.userAgent).toMatch(/Chrome/);
    };

    /** The one request the `type` call made: the common fields, then the body of that type. */
    const arrivedAs = async (type: string, body: Record<string, unknown>): Promise<ReceivedRequest> => {
      const request = await arrived(messageIds[type]!);
      common(request);
      expect(request.json).toMatchObject({ version: 1, type, ...body, messageId: messageIds[type] });
      return request;
    };

    const pageCall = await arrivedAs("page", {
      name: "Pricing",
      category: "Docs",
      properties: { plan_shown: "pro", path: "/pricing", url: `${siteOrigin}/pricing?plan=pro`, title: "Shop" },
    });
    expect(Object.keys(pageCall.json).slice(0, 5)).toEqual(["version", "type", "name", "category", "properties"]);

    const track = await arrivedAs("track", { event: "Order Completed", properties: { revenue: 42.5, currency: "EUR" } });
    expect(track.json).not.toHaveProperty("userId");

    await arrivedAs("identify", { userId: "user-42", traits: { email: "ada@example.com", plan: "pro" } });
    await arrivedAs("group", { groupId: "acme", userId: "user-42", traits: { name: "Acme Inc", employees: 120 } });
    await arrivedAs("alias", { "Previous ID": "anon-before", "User ID": "user-42" });
  });

  it("with the batching delivery strategy, sends batches to /v1/b that arrive as single calls", async () => {
    const page = await openShop("/");
    const sent = await page.evaluate(
      async ({ writeKey, cdnURL }) => {
        const { AnalyticsBrowser } = (globalThis as any).AnalyticsNext;
        const [analytics] = await AnalyticsBrowser.load(
          { writeKey, cdnURL },
          { integrations: { "Segment.io": { deliveryStrategy: { strategy: "batching", config: { size: 3, timeout: 100 } } } } },
        );
        const contexts = [
          await analytics.track("Batched 1", { n: 1 }),
          await analytics.track("Batched 2", { n: 2 }),
          await analytics.track("Batched 3", { n: 3 }),
        ];
        return { messageIds: Object.fromEntries(contexts.map((ctx: any, i: number) => [`t${i}`, ctx.event.messageId])) };
      },
      { writeKey: WRITE_KEY, cdnURL: stack.httpUrl },
    );
    await page.close();
    for (const [index, messageId] of Object.values(sent.messageIds).entries()) {
      const request = await arrived(messageId);
      expect(request.json).toMatchObject({ type: "track", event: `Batched ${index + 1}`, properties: { n: index + 1 } });
      expect(request.json).not.toHaveProperty("writeKey");
    }
  });

  it("navigator.sendBeacon (no preflight, credentials included) and a keepalive fetch with Authorization (preflighted) both land", async () => {
    const page = await openShop("/");
    const answers = await page.evaluate(
      async ({ writeKey, otherKey, api }) => {
        const queued = (globalThis as any).navigator.sendBeacon(
          `${api}/v1/t`,
          JSON.stringify({ writeKey, anonymousId: "beacon-user", event: "Left Page", messageId: "beacon-1" }),
        );
        const post = async (key: string, messageId: string) => {
          const response = await fetch(`${api}/v1/b`, {
            method: "POST",
            keepalive: true,
            headers: { "Content-Type": "text/plain", Authorization: `Basic ${btoa(`${key}:`)}` },
            body: JSON.stringify({
              writeKey: key,
              sentAt: new Date().toISOString(),
              batch: [{ type: "track", anonymousId: "k1", event: "Kept", messageId }],
            }),
          });
          return { status: response.status, body: await response.json() };
        };
        return { queued, allowed: await post(writeKey, "keepalive-1"), refused: await post(otherKey, "keepalive-2") };
      },
      { writeKey: WRITE_KEY, otherKey: OTHER_SITE_KEY, api: stack.httpUrl },
    );
    await page.close();
    expect(answers.queued).toBe(true);
    expect(answers.allowed).toEqual({ status: 200, body: { success: true } });
    // The page can read the refusal: answers to browsers carry CORS headers, errors included.
    expect(answers.refused).toMatchObject({ status: 403, body: { error: { code: "origin_not_allowed" } } });
    expect((await arrived("beacon-1")).json).toMatchObject({ type: "track", event: "Left Page", anonymousId: "beacon-user" });
    expect((await arrived("keepalive-1")).json).toMatchObject({ type: "track", event: "Kept" });
    await stack.settled();
    expect(receiver.byMessageId("keepalive-2")).toEqual([]);
  });

  it("a source whose allowedOrigins leave this page out serves it no settings: analytics.js cannot load", async () => {
    const page = await openShop("/");
    const outcome = await page.evaluate(
      async ({ writeKey, cdnURL }) => {
        const { AnalyticsBrowser } = (globalThis as any).AnalyticsNext;
        try {
          await AnalyticsBrowser.load({ writeKey, cdnURL });
          return "loaded";
        } catch (error) {
          return `refused: ${String(error)}`;
        }
      },
      { writeKey: OTHER_SITE_KEY, cdnURL: stack.httpUrl },
    );
    await page.close();
    expect(outcome).toMatch(/^refused: .*origin_not_allowed/);
  });
});
