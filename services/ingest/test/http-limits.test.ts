import { randomBytes } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { constants, deflateRawSync, gzipSync } from "node:zlib";
import { MAX_BATCH_BYTES, MAX_CALL_BYTES } from "@switchyard/calls";
import { MetricsSnapshot, readCallBatches, waitFor } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { gzipBomb } from "@switchyard/testkit";
import { loadIngestConfig } from "../src/index.js";
import { startIngestFixture, WRITE_KEY, type IngestFixture } from "@switchyard/testkit/fixtures/ingest";

const AUTHORIZATION = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString("base64")}`;
const GOOD_BATCH = JSON.stringify({ batch: [{ type: "track", userId: "u1", event: "Good" }] });

let fixture: IngestFixture | undefined;
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

/** The running fixture (each test starts its own, with the settings it needs). */
function running(): IngestFixture {
  if (!fixture) throw new Error("no ingest fixture started");
  return fixture;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, any>;
  /** Whether the request went over a connection an earlier request of the same agent used. */
  reusedSocket: boolean;
}

/** POSTs `body` with node:http (so the agent, and whether a connection was reused, is the test's). */
function post(path: string, body: Buffer | string, options: { headers?: Record<string, string>; agent?: Agent } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${running().httpUrl}${path}`,
      {
        method: "POST",
        agent: options.agent,
        headers: { "Content-Type": "application/json", Authorization: AUTHORIZATION, ...options.headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, any>,
            reusedSocket: request.reusedSocket,
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

async function storedEvents(): Promise<string[]> {
  return (await readCallBatches(running().nc, running().names)).flatMap((stored) =>
    stored.batch.calls.map((call) => (call.payload?.$case === "track" ? call.payload.value.event : (call.payload?.$case ?? ""))),
  );
}

describe("gzip bodies are inflated no further than the limit", () => {
  it("refuses a 1 GiB gzip bomb at the 500 KB limit, and serves a valid gzip body right after on the same connection", async () => {
    fixture = await startIngestFixture();
    const bomb = gzipBomb(1024);
    expect(bomb.length).toBeLessThan(1.1 * 1024 * 1024);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await post("/v1/batch", bomb, { agent, headers: { "Content-Encoding": "gzip" } });
      expect(refused.status).toBe(413);
      expect(refused.body).toEqual({
        success: false,
        error: { code: "batch_too_large", message: `request body is over ${MAX_BATCH_BYTES} bytes (500 KB) once decoded; split it` },
      });
      // The bomb (about 1 MB as sent) was read to its end, raw, so the connection stays usable.
      expect(refused.headers.connection).not.toBe("close");

      const accepted = await post("/v1/batch", gzipSync(GOOD_BATCH), { agent, headers: { "Content-Encoding": "gzip" } });
      expect(accepted).toMatchObject({ status: 200, body: { success: true }, reusedSocket: true });
    } finally {
      agent.destroy();
    }
    expect(await storedEvents()).toEqual(["Good"]);
  });

  it("refuses a gzip bomb sent to a single-call endpoint at the 32 KB limit", async () => {
    fixture = await startIngestFixture();
    const refused = await post("/v1/track", gzipBomb(64), { headers: { "Content-Encoding": "gzip" } });
    expect(refused).toMatchObject({
      status: 413,
      body: { error: { code: "call_too_large", message: `request body is over ${MAX_CALL_BYTES} bytes (32 KB) once decoded; split it` } },
    });
  });

  it("refuses a gzip body that decodes small but is over the limit as sent", async () => {
    fixture = await startIngestFixture();
    // A valid batch followed by 30,000 empty gzip members (20 bytes each): 600 KB to send, 80 bytes decoded.
    const empty = gzipSync("");
    const padded = Buffer.concat([gzipSync(GOOD_BATCH), ...Array.from({ length: 30_000 }, () => empty)]);
    const refused = await post("/v1/batch", padded, { headers: { "Content-Encoding": "gzip" } });
    expect(refused.status).toBe(413);
    expect(refused.body.error).toEqual({
      code: "batch_too_large",
      message: `request body is over ${MAX_BATCH_BYTES + 65_536} bytes as sent (the 500 KB limit plus 64 KB for gzip framing); split it`,
    });
    // The same, under the cap as sent, is a valid body.
    const smaller = Buffer.concat([gzipSync(GOOD_BATCH), ...Array.from({ length: 1_000 }, () => empty)]);
    expect(await post("/v1/batch", smaller, { headers: { "Content-Encoding": "gzip" } })).toMatchObject({ status: 200 });
    expect(await storedEvents()).toEqual(["Good"]);
  });

  it("still takes a gzip body just under the limit", async () => {
    fixture = await startIngestFixture();
    // Random letters: gzip saves little on them, so the body as sent is near its decoded size.
    const event = randomBytes(22 * 1024).toString("base64");
    const batch = JSON.stringify({ batch: Array.from({ length: 15 }, () => ({ type: "track", userId: "u1", event })) });
    expect(batch.length).toBeLessThan(MAX_BATCH_BYTES);
    expect(batch.length).toBeGreaterThan(MAX_BATCH_BYTES - 64 * 1024);
    const accepted = await post("/v1/batch", gzipSync(batch), { headers: { "Content-Encoding": "gzip" } });
    expect(accepted).toMatchObject({ status: 200, body: { success: true } });
    expect(await storedEvents()).toHaveLength(15);
  });
});

/** An answer, and every error the client saw on its request or connection up to the connection's close. */
interface WatchedAnswer extends Answer {
  clientErrors: string[];
  /** Bytes of the body the client had written when the answer's headers came. */
  writtenAtAnswer: number;
}

/**
 * POSTs a gzip body with node:http on a connection of its own and waits for the connection to
 * close: whole in one write (`at-once`), or streamed chunked in 16 KB writes, each after the last
 * was flushed, stopping (and ending the request) as soon as the answer comes (`streamed`).
 */
function postAndWatch(path: string, body: Buffer, mode: "at-once" | "streamed"): Promise<WatchedAnswer> {
  return new Promise((resolve, reject) => {
    const clientErrors: string[] = [];
    let written = 0;
    let writtenAtAnswer = -1;
    let answer: Answer | undefined;
    let socketClosed = false;
    const settle = () => {
      if (answer && socketClosed) resolve({ ...answer, clientErrors, writtenAtAnswer });
    };
    const request = httpRequest(
      `${running().httpUrl}${path}`,
      {
        method: "POST",
        agent: false,
        headers: {
          "Content-Type": "application/json",
          "Content-Encoding": "gzip",
          Authorization: AUTHORIZATION,
          ...(mode === "at-once" ? { "Content-Length": String(body.length) } : {}),
        },
      },
      (response) => {
        writtenAtAnswer = written;
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error) => clientErrors.push(`response: ${error.message}`));
        response.on("end", () => {
          answer = {
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, any>,
            reusedSocket: false,
          };
          settle();
        });
      },
    );
    request.on("error", (error) => clientErrors.push(`request: ${error.message}`));
    request.on("socket", (socket) =>
      socket.once("close", () => {
        socketClosed = true;
        if (!answer) reject(new Error(`connection closed before an answer (${clientErrors.join("; ") || "no error"})`));
        settle();
      }),
    );
    if (mode === "at-once") {
      written = body.length;
      request.end(body);
      return;
    }
    const writeNext = () => {
      if (writtenAtAnswer >= 0 || written >= body.length) return request.end();
      const chunk = body.subarray(written, written + 16 * 1024);
      written += chunk.length;
      request.write(chunk, () => setImmediate(writeNext));
    };
    writeNext();
  });
}

/**
 * The first `megabytes` MB (about) of a gzip body inflating to zeros without end: blocks of 1 MiB
 * of zeros deflated to about 1 KB each, with no trailer, which ingest never reaches (gzipBomb
 * would spend seconds on the CRC of gigabytes).
 */
function endlessGzipBomb(megabytes: number): Buffer {
  const block = deflateRawSync(Buffer.alloc(1024 * 1024), { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
  return Buffer.concat([header, ...Array.from({ length: Math.ceil((megabytes * 1024 * 1024) / block.length) }, () => block)]);
}

describe("a gzip body too large to read on", () => {
  const refusal = {
    success: false,
    error: { code: "batch_too_large", message: `request body is over ${MAX_BATCH_BYTES} bytes (500 KB) once decoded; split it` },
  };

  it("sent at once: gets 413 and its JSON body, then the connection is closed without a reset", async () => {
    fixture = await startIngestFixture();
    // 16 MB as sent (16 GiB and more inflated): far over what is read on before answering.
    const bomb = endlessGzipBomb(16);
    const answer = await postAndWatch("/v1/batch", bomb, "at-once");
    expect(answer).toMatchObject({ status: 413, body: refusal, clientErrors: [] });
    expect(answer.headers.connection).toBe("close");
    expect(await post("/v1/batch", gzipSync(GOOD_BATCH), { headers: { "Content-Encoding": "gzip" } })).toMatchObject({ status: 200 });
    expect(await storedEvents()).toEqual(["Good"]);
  });

  it("streamed: gets 413 and its JSON body while still sending, then the connection is closed without a reset", async () => {
    fixture = await startIngestFixture();
    const bomb = endlessGzipBomb(16);
    const answer = await postAndWatch("/v1/batch", bomb, "streamed");
    expect(answer).toMatchObject({ status: 413, body: refusal, clientErrors: [] });
    expect(answer.headers.connection).toBe("close");
    // Answered long before the end of the body: the server did not wait for the rest of it.
    expect(answer.writtenAtAnswer).toBeGreaterThan(0);
    expect(answer.writtenAtAnswer).toBeLessThan(bomb.length / 2);
    expect(await post("/v1/batch", gzipSync(GOOD_BATCH), { headers: { "Content-Encoding": "gzip" } })).toMatchObject({ status: 200 });
    expect(await storedEvents()).toEqual(["Good"]);
  });

  it("leaves ingest healthy after many of them, at once and streamed, side by side", async () => {
    fixture = await startIngestFixture();
    const bomb = endlessGzipBomb(8);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => postAndWatch("/v1/batch", bomb, i % 2 === 0 ? "at-once" : "streamed")),
    );
    for (const answer of answers) expect(answer).toMatchObject({ status: 413, body: refusal, clientErrors: [] });
    const health = await fetch(`http://127.0.0.1:${running().ingest.opsPort}/healthz`);
    expect(health.status).toBe(200);
    expect(await post("/v1/batch", gzipSync(GOOD_BATCH), { headers: { "Content-Encoding": "gzip" } })).toMatchObject({ status: 200 });
    const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${running().ingest.opsPort}/metrics`);
    expect(metrics.value("switchyard_ingest_requests_rejected_total", { transport: "http", reason: "batch_too_large" })).toBe(6);
    expect(await storedEvents()).toEqual(["Good"]);
  });
});

describe("a leading UTF-8 byte order mark", () => {
  it("is dropped from a plain or a gzip body", async () => {
    fixture = await startIngestFixture();
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const plain = Buffer.concat([bom, Buffer.from(JSON.stringify({ userId: "u1", event: "Plain" }))]);
    expect(await post("/v1/track", plain)).toMatchObject({ status: 200, body: { success: true } });
    const gzipped = gzipSync(
      Buffer.concat([bom, Buffer.from(JSON.stringify({ batch: [{ type: "track", userId: "u1", event: "Gzip" }] }))]),
    );
    expect(await post("/v1/batch", gzipped, { headers: { "Content-Encoding": "gzip" } })).toMatchObject({ status: 200 });
    // Only one: a second mark is not JSON.
    const twice = Buffer.concat([bom, bom, Buffer.from(JSON.stringify({ userId: "u1", event: "Twice" }))]);
    expect(await post("/v1/track", twice)).toMatchObject({ status: 400, body: { error: { code: "invalid_json" } } });
    expect(await storedEvents()).toEqual(["Plain", "Gzip"]);
  });
});

/** A raw TCP client of the HTTP port: what it sent is up to the test, what came back is kept. */
class RawClient {
  received = "";
  closed = false;
  private trickle: NodeJS.Timeout | undefined;
  readonly done: Promise<void>;

  constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => (this.received += chunk.toString("latin1")));
    socket.on("error", () => {});
    this.done = new Promise((resolve) =>
      socket.once("close", () => {
        this.closed = true;
        clearInterval(this.trickle);
        resolve();
      }),
    );
  }

  static async open(port: number): Promise<RawClient> {
    const socket = connect({ host: "127.0.0.1", port });
    const client = new RawClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    return client;
  }

  /** Sends headers for a body of `length` bytes, then one byte of it every `everyMs` until the server closes. */
  trickleBody(length: number, everyMs: number): void {
    this.socket.write(requestHead("/v1/track", length));
    this.trickle = setInterval(() => {
      if (!this.socket.destroyed) this.socket.write(" ");
    }, everyMs);
  }

  /** Sends a whole request and waits for its whole answer (this test's answers are small and have a Content-Length). */
  async exchange(body: string): Promise<string> {
    const start = this.received.length;
    this.socket.write(requestHead("/v1/track", Buffer.byteLength(body)) + body);
    return waitFor("a whole HTTP answer", () => {
      const text = this.received.slice(start);
      const end = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text)?.[1];
      return end >= 0 && length !== undefined && text.length >= end + 4 + Number(length) ? text : undefined;
    });
  }

  destroy(): void {
    clearInterval(this.trickle);
    this.socket.destroy();
  }
}

function requestHead(path: string, length: number): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${AUTHORIZATION}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
  );
}

const TRACK = (event: string) => JSON.stringify({ userId: "u1", event });

describe("slow clients", () => {
  it("are cut off with 408 once their timeout passes, while fresh requests are served", async () => {
    fixture = await startIngestFixture({ env: { INGEST_HTTP_HEADERS_TIMEOUT_MS: "500", INGEST_HTTP_REQUEST_TIMEOUT_MS: "1500" } });
    const port = running().ingest.httpPort;
    const clients: RawClient[] = [];
    try {
      // Half never finish their headers; half send headers and then trickle a body they never finish.
      for (let i = 0; i < 50; i++) {
        const client = await RawClient.open(port);
        if (i % 2 === 0) client.socket.write(`POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
        else client.trickleBody(100_000, 50);
        clients.push(client);
      }
      for (let i = 0; i < 5; i++) {
        expect(await post("/v1/track", TRACK(`Fresh ${i}`))).toMatchObject({ status: 200, body: { success: true } });
      }
      await waitFor("every slow client to be cut off", () => clients.every((client) => client.closed), { timeoutMs: 15_000 });
      for (const client of clients) expect(client.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      // The server is still there for the next one.
      expect(await post("/v1/track", TRACK("After"))).toMatchObject({ status: 200 });
    } finally {
      for (const client of clients) client.destroy();
    }
    expect(await storedEvents()).toEqual(["Fresh 0", "Fresh 1", "Fresh 2", "Fresh 3", "Fresh 4", "After"]);
  });

  it("refuses settings Node cannot take: a headers timeout over the request timeout", () => {
    expect(() => loadIngestConfig({ INGEST_HTTP_HEADERS_TIMEOUT_MS: "2000", INGEST_HTTP_REQUEST_TIMEOUT_MS: "1000" })).toThrow(
      /INGEST_HTTP_HEADERS_TIMEOUT_MS: must not be more than INGEST_HTTP_REQUEST_TIMEOUT_MS \(1000\)/,
    );
  });
});

describe("the connection cap", () => {
  it("closes a connection over the cap at once, keeps serving the others, and takes new ones once some close", async () => {
    fixture = await startIngestFixture({ env: { INGEST_HTTP_MAX_CONNECTIONS: "4" } });
    const port = running().ingest.httpPort;
    const held: RawClient[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const client = await RawClient.open(port);
        expect(await client.exchange(TRACK(`Held ${i}`))).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        held.push(client);
      }
      // Over the cap: closed by the server without an answer, even with a whole request sent.
      const extra = await RawClient.open(port);
      extra.socket.write(requestHead("/v1/track", TRACK("Extra").length) + TRACK("Extra"));
      await extra.done;
      expect(extra.received).toBe("");

      // The connections within the cap are still served.
      for (const [i, client] of held.entries()) expect(await client.exchange(TRACK(`Again ${i}`))).toMatch(/^HTTP\/1\.1 200 OK\r\n/);

      const metrics = await MetricsSnapshot.scrape(`http://127.0.0.1:${running().ingest.opsPort}/metrics`);
      expect(metrics.value("switchyard_ingest_requests_rejected_total", { transport: "http", reason: "too_many_connections" })).toBe(1);

      // Once one closes, a new connection is taken (the server counts the close asynchronously: poll).
      held.pop()?.destroy();
      await waitFor("a new connection to be served", async () => {
        const client = await RawClient.open(port);
        try {
          return /^HTTP\/1\.1 200 OK\r\n/.test(await Promise.race([client.exchange(TRACK("New")), client.done.then(() => "")]));
        } finally {
          client.destroy();
        }
      });
    } finally {
      for (const client of held) client.destroy();
    }
    const events = await storedEvents();
    expect(events).not.toContain("Extra");
    expect(events.filter((event) => event === "New")).toHaveLength(1);
  });
});
