import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from "node:net";
import { freePort, LOOPBACK_CIDRS } from "@switchyard/testkit";
import { errors } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { AddressPolicy } from "./address-policy.js";
import { AddressRefusedError } from "./guarded-connector.js";
import { describeFailure, RESPONSE_BODY_KEPT, WebhookSender } from "./webhook-sender.js";

const LOOPBACK = AddressPolicy.fromList(LOOPBACK_CIDRS);

const TIMEOUT_MS = 5_000;

/** An error as Node's socket layer raises it: a message and a string code. */
function systemError(code: string, message = `${code} happened`): Error {
  return Object.assign(new Error(message), { code });
}

/** How fetch-style callers see it: a generic error with the real one as its cause. */
function wrapped(cause: Error): Error {
  return new TypeError("fetch failed", { cause });
}

describe("describeFailure", () => {
  it("connection refused is retryable", () => {
    expect(describeFailure(systemError("ECONNREFUSED"), TIMEOUT_MS)).toEqual({ error: "connection refused", outcome: "retryable" });
  });

  it.each([
    ["ECONNRESET", systemError("ECONNRESET")],
    ["EPIPE", systemError("EPIPE")],
    ["undici SocketError", new errors.SocketError("other side closed")],
  ])("a reset connection (%s) is retryable", (_name, error) => {
    expect(describeFailure(error, TIMEOUT_MS)).toEqual({ error: "connection reset", outcome: "retryable" });
  });

  it.each([
    ["AbortSignal.timeout", new DOMException("The operation was aborted due to timeout", "TimeoutError")],
    ["an abort", new DOMException("This operation was aborted", "AbortError")],
    ["undici HeadersTimeoutError", new errors.HeadersTimeoutError()],
    ["undici BodyTimeoutError", new errors.BodyTimeoutError()],
    ["undici ConnectTimeoutError", new errors.ConnectTimeoutError()],
  ])("a timeout (%s) is retryable and names the limit", (_name, error) => {
    expect(describeFailure(error, TIMEOUT_MS)).toEqual({ error: "timeout: no response within 5000 ms", outcome: "retryable" });
  });

  it.each(["ENOTFOUND", "EAI_AGAIN"])("a DNS failure (%s) is retryable", (code) => {
    expect(describeFailure(systemError(code), TIMEOUT_MS)).toEqual({ error: "DNS lookup failed", outcome: "retryable" });
  });

  it.each([
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "SELF_SIGNED_CERT_IN_CHAIN",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    "CERT_HAS_EXPIRED",
    "ERR_TLS_CERT_ALTNAME_INVALID",
  ])("a TLS certificate error (%s) is permanent and says why", (code) => {
    const result = describeFailure(systemError(code, "self-signed certificate"), TIMEOUT_MS);
    expect(result.outcome).toBe("permanent");
    expect(result.error).toBe(`TLS certificate: self-signed certificate (${code})`);
  });

  it("finds the code on a wrapped cause, and reports the root message", () => {
    expect(describeFailure(wrapped(systemError("ECONNREFUSED")), TIMEOUT_MS)).toEqual({
      error: "connection refused",
      outcome: "retryable",
    });
    const tls = describeFailure(wrapped(systemError("DEPTH_ZERO_SELF_SIGNED_CERT", "self-signed certificate")), TIMEOUT_MS);
    expect(tls).toEqual({ error: "TLS certificate: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)", outcome: "permanent" });
  });

  it("a refused address is permanent and says why", () => {
    const error = wrapped(
      new AddressRefusedError("localhost resolves to 127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS"),
    );
    expect(describeFailure(error, TIMEOUT_MS)).toEqual({
      error: "address refused: localhost resolves to 127.0.0.1: loopback (127.0.0.0/8), not in DELIVERY_ALLOWED_CIDRS",
      outcome: "permanent",
    });
  });

  it("an invalid URL is permanent", () => {
    expect(describeFailure(systemError("ERR_INVALID_URL", "Invalid URL"), TIMEOUT_MS)).toEqual({
      error: "invalid request: Invalid URL",
      outcome: "permanent",
    });
  });

  it("anything else is retryable, with its code and message", () => {
    expect(describeFailure(systemError("EHOSTUNREACH", "no route to host"), TIMEOUT_MS)).toEqual({
      error: "EHOSTUNREACH: no route to host",
      outcome: "retryable",
    });
    expect(describeFailure("a thrown string", TIMEOUT_MS)).toEqual({ error: "error: a thrown string", outcome: "retryable" });
  });
});

describe("WebhookSender against real sockets", () => {
  const servers: (HttpServer | TcpServer)[] = [];
  let sender: WebhookSender | undefined;

  afterEach(async () => {
    await sender?.close();
    sender = undefined;
    for (const server of servers.splice(0)) {
      if ("closeAllConnections" in server) server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  function newSender(timeoutMs = TIMEOUT_MS): WebhookSender {
    sender = new WebhookSender({ timeoutMs, maxResponseBytes: 1024, connectionsPerOrigin: 2, addressPolicy: LOOPBACK });
    return sender;
  }

  async function listen<T extends HttpServer | TcpServer>(server: T): Promise<string> {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  }

  const body = Buffer.from('{"type":"track"}');

  it("classifies a refused connection", async () => {
    const result = await newSender().send(`http://127.0.0.1:${await freePort()}/hook`, [], body);
    expect(result).toMatchObject({ status: 0, error: "connection refused", outcome: "retryable" });
  });

  it("classifies a connection the receiver drops", async () => {
    const url = await listen(createTcpServer((socket) => socket.once("data", () => socket.destroy())));
    const result = await newSender().send(url, [], body);
    expect(result).toMatchObject({ status: 0, error: "connection reset", outcome: "retryable" });
  });

  it("gives up on a receiver that never answers, as a retryable timeout", async () => {
    const url = await listen(createHttpServer(() => {}));
    const result = await newSender(300).send(url, [], body);
    expect(result).toMatchObject({ status: 0, error: "timeout: no response within 300 ms", outcome: "retryable" });
  });

  it("does not follow a redirect", async () => {
    let followed = 0;
    const url = await listen(
      createHttpServer((request, response) => {
        if (request.url === "/elsewhere") followed++;
        response.writeHead(request.url === "/elsewhere" ? 200 : 302, { location: "/elsewhere" }).end();
      }),
    );
    const result = await newSender().send(url, [], body);
    expect(result).toMatchObject({ status: 302, error: "", outcome: "permanent" });
    expect(followed).toBe(0);
  });

  it("takes a 2xx whose announced body is over the cap at its headers, without waiting for the body", async () => {
    // Announces 100 MB and sends none of it: only cutting at the headers answers before the (long) timeout.
    const url = await listen(
      createHttpServer((_request, response) => response.writeHead(200, { "content-length": String(100 << 20) }).flushHeaders()),
    );
    const limit = Error.stackTraceLimit;
    const result = await newSender(600_000).send(url, [], body);
    expect(result).toMatchObject({ status: 200, error: "", outcome: "delivered" });
    // The connection is closed with stackless errors; the process's own setting is back as it was.
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it("sends with the method it is given (POST unless told), the body as it is", async () => {
    const seen: string[] = [];
    const url = await listen(
      createHttpServer((request, response) => {
        let text = "";
        request.on("data", (chunk: Buffer) => (text += chunk.toString()));
        request.on("end", () => {
          seen.push(`${request.method} ${text}`);
          response.writeHead(204).end();
        });
      }),
    );
    const sending = newSender();
    for (const method of [undefined, "PUT", "PATCH"] as const) {
      expect(await sending.send(url, [], body, "hook", method)).toMatchObject({ status: 204, outcome: "delivered" });
    }
    expect(seen).toEqual(['POST {"type":"track"}', 'PUT {"type":"track"}', 'PATCH {"type":"track"}']);
  });

  it("keeps a small response's headers and body for the attempt log", async () => {
    const url = await listen(createHttpServer((_request, response) => response.writeHead(201, { "x-receipt": "r-9" }).end("accepted")));
    const result = await newSender().send(url, [], body);
    expect(result).toMatchObject({ status: 201, responseBodyTruncated: false });
    expect(result.responseBody?.toString()).toBe("accepted");
    const headers = result.responseHeaders!.map((part) => part.toString());
    expect(headers[headers.indexOf("x-receipt") + 1]).toBe("r-9");
  });

  it("keeps at most the first 4 KB of an endless body, and still cuts it at the cap without waiting for its end", async () => {
    // Chunked, never ending: only the cap ends the exchange (the timeout is far off).
    const pattern = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => 65 + (i % 26)));
    const url = await listen(
      createHttpServer((_request, response) => {
        response.writeHead(200);
        const timer = setInterval(() => response.write(pattern), 5);
        response.on("close", () => clearInterval(timer));
      }),
    );
    const result = await newSender(600_000).send(url, [], body);
    expect(result).toMatchObject({ status: 200, outcome: "delivered", responseBodyTruncated: true });
    expect(result.responseBody!.length).toBeLessThanOrEqual(RESPONSE_BODY_KEPT);
    expect(result.responseBody!.equals(pattern.subarray(0, result.responseBody!.length))).toBe(true);
  });

  it("says a body announced over the cap was cut, keeping none of it", async () => {
    const url = await listen(
      createHttpServer((_request, response) => response.writeHead(200, { "content-length": String(100 << 20) }).flushHeaders()),
    );
    const result = await newSender(600_000).send(url, [], body);
    expect(result).toMatchObject({ status: 200, responseBodyTruncated: true, responseBody: undefined, connectionClosed: true });
  });

  it("says whether the answer left its connection open: a receiver that says Connection: close does not", async () => {
    const url = await listen(
      createHttpServer((request, response) => {
        if (request.url === "/hook?close") response.setHeader("connection", "close");
        response.writeHead(200).end();
      }),
    );
    const sending = newSender();
    expect(await sending.send(url, [], body)).toMatchObject({ status: 200, connectionClosed: false });
    expect(await sending.send(`${url}?close`, [], body)).toMatchObject({ status: 200, connectionClosed: true });
  });

  it("keeps a destination's pool through answers that close the connection, and closes it once idle", async () => {
    let connections = 0;
    const server = createHttpServer((_request, response) =>
      response.writeHead(200, { "content-length": String(100 << 20) }).flushHeaders(),
    );
    server.on("connection", () => connections++);
    const url = await listen(server);
    const sending = newSender(600_000);
    for (let n = 0; n < 5; n++)
      expect(await sending.send(url, [], body, "cut")).toMatchObject({ status: 200, responseBodyTruncated: true });
    expect(await sending.send(url, [], body, "other")).toMatchObject({ status: 200 });
    // Every cut answer closed its connection; the pools (one per destination and origin) stayed.
    expect(connections).toBeGreaterThanOrEqual(6);
    expect(sending.poolCount).toBe(2);
    sending.closeIdlePools(Date.now());
    expect(sending.poolCount).toBe(2);
    sending.closeIdlePools(Date.now() + 5 * 60_000);
    expect(sending.poolCount).toBe(0);
    // A destination used again gets a new pool.
    expect(await sending.send(url, [], body, "cut")).toMatchObject({ status: 200 });
    expect(sending.poolCount).toBe(1);
  });

  it("reads Retry-After from a 429", async () => {
    const url = await listen(createHttpServer((_request, response) => response.writeHead(429, { "retry-after": "7" }).end()));
    const result = await newSender().send(url, [], body);
    expect(result).toMatchObject({ status: 429, outcome: "retryable", retryAfterMs: 7_000 });
  });
});

describe("WebhookSender address policy (SSRF protection)", () => {
  const servers: HttpServer[] = [];
  const senders: WebhookSender[] = [];
  let requests = 0;

  afterEach(async () => {
    await Promise.all(senders.splice(0).map((s) => s.close()));
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    requests = 0;
  });

  function sender(addressPolicy?: AddressPolicy): WebhookSender {
    const made = new WebhookSender({
      timeoutMs: TIMEOUT_MS,
      maxResponseBytes: 1024,
      connectionsPerOrigin: 2,
      ...(addressPolicy ? { addressPolicy } : {}),
    });
    senders.push(made);
    return made;
  }

  /** A receiver on 127.0.0.1 (and, when the machine has IPv6 loopback, nothing else): counts requests. */
  async function receiver(): Promise<number> {
    const server = createHttpServer((request, response) => {
      requests++;
      request.resume();
      response.end("ok");
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return (server.address() as AddressInfo).port;
  }

  const body = Buffer.from('{"type":"track"}');

  it.each([
    ["an IPv4 literal", (port: number) => `http://127.0.0.1:${port}/hook`, "127.0.0.1: loopback (127.0.0.0/8)"],
    ["a name that resolves to loopback", (port: number) => `http://localhost:${port}/hook`, "localhost resolves to"],
    ["an IPv4-mapped IPv6 literal", (port: number) => `http://[::ffff:127.0.0.1]:${port}/hook`, "::ffff:127.0.0.1: loopback (127.0.0.0/8)"],
  ])("refuses %s without an allowlist: no request, a permanent failure that says why", async (_name, url, reason) => {
    const port = await receiver();
    const result = await sender().send(url(port), [], body);
    expect(result.status).toBe(0);
    expect(result.outcome).toBe("permanent");
    expect(result.error).toContain("address refused: ");
    expect(result.error).toContain(reason);
    expect(result.error).toContain("not in DELIVERY_ALLOWED_CIDRS");
    expect(requests).toBe(0);
  });

  it("refuses the cloud metadata address without connecting", async () => {
    const result = await sender().send("http://169.254.169.254/latest/meta-data/", [], body);
    expect(result).toMatchObject({
      status: 0,
      outcome: "permanent",
      error: "address refused: 169.254.169.254: cloud metadata (169.254.169.254/32), not in DELIVERY_ALLOWED_CIDRS",
    });
  });

  it("delivers to loopback, by address and by name, once the allowlist permits it", async () => {
    const port = await receiver();
    const allowed = sender(LOOPBACK);
    expect(await allowed.send(`http://127.0.0.1:${port}/hook`, [], body)).toMatchObject({ status: 200, outcome: "delivered" });
    expect(await allowed.send(`http://localhost:${port}/hook`, [], body, "by-name")).toMatchObject({ outcome: "delivered" });
    expect(requests).toBe(2);
  });

  it("an allowlist of other ranges does not let loopback through", async () => {
    const port = await receiver();
    const result = await sender(AddressPolicy.fromList("10.0.0.0/8")).send(`http://127.0.0.1:${port}/hook`, [], body);
    expect(result.outcome).toBe("permanent");
    expect(requests).toBe(0);
  });

  it("never follows a redirect: a 3xx is the (permanent) outcome and the target gets nothing", async () => {
    const targetPort = await receiver();
    const redirecting = createHttpServer((request, response) => {
      request.resume();
      response.writeHead(307, { Location: `http://127.0.0.1:${targetPort}/hook` }).end();
    });
    servers.push(redirecting);
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/hook`;
    const result = await sender(LOOPBACK).send(url, [], body);
    expect(result).toMatchObject({ status: 307, outcome: "permanent" });
    expect(requests).toBe(0);
  });
});
