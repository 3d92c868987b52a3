import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Worker } from "node:worker_threads";
import { freePort, LOOPBACK_CIDRS } from "@switchyard/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AddressPolicy } from "./address-policy.js";
import { ChurnIsolatingSender, MOVE_AFTER_CLOSED, RETURN_AFTER_KEPT } from "./churn-isolating-sender.js";
import { SenderThread } from "./sender-thread.js";
import { WebhookSender } from "./webhook-sender.js";

const OPTIONS = { timeoutMs: 5_000, maxResponseBytes: 1024, connectionsPerOrigin: 2 };
const body = Buffer.from('{"type":"track"}');

describe("ChurnIsolatingSender against real sockets and a real sender thread", () => {
  const servers: Server[] = [];
  const senders: ChurnIsolatingSender[] = [];

  afterEach(async () => {
    await Promise.all(senders.splice(0).map((sender) => sender.close()));
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  function newSender() {
    const thread = new SenderThread({ ...OPTIONS, allowlist: LOOPBACK_CIDRS.split(",") });
    const moves: [string, boolean][] = [];
    const sender = new ChurnIsolatingSender(
      new WebhookSender({ ...OPTIONS, addressPolicy: AddressPolicy.fromList(LOOPBACK_CIDRS) }),
      thread,
      (destination, onThread) => moves.push([destination, onThread]),
    );
    senders.push(sender);
    return { sender, thread, moves };
  }

  /** A receiver that answers 201 with a header and a short body; with `cut`, a body announced far over the limit. */
  async function receiver(): Promise<{ url: string; cut: { on: boolean }; connections: () => number }> {
    const cut = { on: true };
    let connections = 0;
    const server = createServer((request, response) => {
      request.resume();
      if (cut.on) response.writeHead(200, { "content-length": String(100 << 20) }).flushHeaders();
      else response.writeHead(201, { "x-receipt": "r-1" }).end("accepted");
    });
    server.on("connection", () => connections++);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, cut, connections: () => connections };
  }

  it("moves a destination whose answers close their connections to the thread, and back once it keeps them", async () => {
    const { sender, thread, moves } = newSender();
    const { url, cut, connections } = await receiver();

    for (let n = 0; n < MOVE_AFTER_CLOSED; n++) {
      expect(await sender.send(url, [], body, "churning")).toMatchObject({ status: 200, outcome: "delivered", connectionClosed: true });
    }
    expect(moves).toEqual([["churning", true]]);
    expect(sender.onThread).toBe(1);
    expect(thread.running).toBe(false); // nothing sent through it yet

    // Sent from the thread, answered as before: every answer still a new connection.
    const before = connections();
    for (let n = 0; n < 3; n++) {
      expect(await sender.send(url, [], body, "churning")).toMatchObject({
        status: 200,
        outcome: "delivered",
        responseBodyTruncated: true,
        connectionClosed: true,
      });
    }
    expect(thread.running).toBe(true);
    expect(connections()).toBeGreaterThanOrEqual(before + 3);

    // The receiver keeps its connections again: what the thread hands back is what the main thread would have.
    cut.on = false;
    const kept = await sender.send(url, [], body, "churning");
    expect(kept).toMatchObject({ status: 201, outcome: "delivered", responseBodyTruncated: false, connectionClosed: false });
    expect(Buffer.isBuffer(kept.responseBody)).toBe(true);
    expect(kept.responseBody!.toString()).toBe("accepted");
    const headers = kept.responseHeaders!.map((part) => part.toString());
    expect(kept.responseHeaders!.every((part) => Buffer.isBuffer(part))).toBe(true);
    expect(headers[headers.indexOf("x-receipt") + 1]).toBe("r-1");
    for (let n = 1; n < RETURN_AFTER_KEPT; n++) await sender.send(url, [], body, "churning");
    expect(moves).toEqual([
      ["churning", true],
      ["churning", false],
    ]);
    expect(sender.onThread).toBe(0);
  });

  it("keeps destinations whose connections last, or that do not answer at all, on the main thread", async () => {
    const { sender, thread, moves } = newSender();
    const { url, cut } = await receiver();
    cut.on = false;
    const refused = `http://127.0.0.1:${await freePort()}/hook`;
    for (let n = 0; n < 2 * MOVE_AFTER_CLOSED; n++) {
      expect(await sender.send(url, [], body, "healthy")).toMatchObject({ status: 201, connectionClosed: false });
      // No answer is for the circuit breaker, not for this.
      expect(await sender.send(refused, [], body, "down")).toMatchObject({ status: 0, outcome: "retryable" });
    }
    // An answer that closed its connection now and then is not a pattern.
    cut.on = true;
    await sender.send(url, [], body, "healthy");
    cut.on = false;
    await sender.send(url, [], body, "healthy");
    expect(moves).toEqual([]);
    expect(thread.running).toBe(false);
  });

  it("answers the requests a stopped thread had in flight as failed (retryable), and starts a new one for the next", async () => {
    const thread = new SenderThread({ ...OPTIONS, timeoutMs: 600_000, allowlist: LOOPBACK_CIDRS.split(",") });
    const server = createServer(() => {}); // never answers
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const inFlight = thread.send(url, [], body, "held");
    await new Promise<void>((resolve) => server.once("request", () => resolve()));
    // The thread dies (as on an out-of-memory error in it): stopped from outside, its requests unanswered.
    await (thread as unknown as { worker: Worker }).worker.terminate();
    expect(await inFlight).toMatchObject({ status: 0, outcome: "retryable", error: expect.stringMatching(/^sender thread exited/) });
    expect(thread.running).toBe(false);
    const { url: answering, cut } = await receiver();
    cut.on = false;
    expect(await thread.send(answering, [], body, "next")).toMatchObject({ status: 201 });
    await thread.close();
  });
});
