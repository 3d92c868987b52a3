/**
 * Sender CPU per webhook POST, three ways: `npm run bench:http-send [-- --requests N --rounds N]`.
 *
 * The same signed-webhook-sized POSTs (620-byte body, the headers delivery sends) to the webhook
 * sink (bench/lib/webhook-sink.ts, its own process, answering 200), 32 keep-alive connections and
 * 32 requests in flight, as delivery sends to one destination:
 *  - request: undici's `request()` and `body.dump()`, as `bench:delivery`'s raw client sends;
 *  - dispatch: undici's dispatcher API with a handler that keeps only the status, as delivery's
 *    WebhookSender sends (outbound/webhook-sender.ts);
 *  - socket: the request written to a kept `net.Socket` as one corked write, the answer read to its
 *    status line and `content-length`. A floor, not a client: no chunked answers, TLS, timeouts or
 *    address checks. It shows what undici's own work is worth per request.
 * The three take turns for `--rounds` rounds after a warm-up round each. Reports this process's
 * CPU µs per request (`process.cpuUsage`) and requests/s for each, and each against `request`.
 * Writes bench/results/http-send-latest.json.
 */
import { connect as connectTcp, type Socket } from "node:net";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Agent, Pool, request } from "undici";
import { machineFacts, positiveInt, runBenchmark, runLanes, writeResults } from "./lib/run-support.js";
import { WebhookSinkChild } from "./lib/webhook-sink-child.js";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const CONNECTIONS = 32;
const PATH = "/send";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "100000" },
    rounds: { type: "string", default: "3" },
  },
});
const params = {
  requests: positiveInt("--requests", values.requests),
  rounds: positiveInt("--rounds", values.rounds),
  connections: CONNECTIONS,
};

const body = Buffer.alloc(620, 0x61);
const HEADERS = ["user-agent", "Switchyard/1.0", "content-type", "application/json", "x-signature", "0".repeat(40)];

interface Side {
  name: "request" | "dispatch" | "socket";
  /** One POST; resolves with its status. */
  send(): Promise<number>;
  close(): Promise<void>;
}

function requestSide(origin: string): Side {
  const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: 10_000 });
  const headers = Object.fromEntries(Array.from({ length: HEADERS.length / 2 }, (_, i) => [HEADERS[2 * i]!, HEADERS[2 * i + 1]!]));
  return {
    name: "request",
    send: async () => {
      const response = await request(`${origin}${PATH}`, { method: "POST", headers, body, dispatcher: agent });
      await response.body.dump();
      return response.statusCode;
    },
    close: () => agent.close(),
  };
}

function dispatchSide(origin: string): Side {
  const pool = new Pool(origin, { connections: CONNECTIONS, keepAliveTimeout: 10_000 });
  return {
    name: "dispatch",
    send: () =>
      new Promise((resolve, reject) => {
        let status = 0;
        pool.dispatch(
          { origin, path: PATH, method: "POST", headers: HEADERS, body },
          {
            onConnect: () => undefined,
            onHeaders: (statusCode) => {
              status = statusCode;
              return true;
            },
            onData: () => true,
            onComplete: () => resolve(status),
            onError: reject,
          },
        );
      }),
    close: () => pool.close(),
  };
}

/** A kept connection of the socket side: the answer being read, and who waits for it. */
interface Connection {
  socket: Socket;
  received: Buffer | undefined;
  answered: ((status: number) => void) | undefined;
}

async function socketSide(port: number): Promise<Side> {
  const lines = [`POST ${PATH} HTTP/1.1`, `host: 127.0.0.1:${port}`];
  for (let i = 0; i < HEADERS.length; i += 2) lines.push(`${HEADERS[i]}: ${HEADERS[i + 1]}`);
  const head = Buffer.from(`${lines.join("\r\n")}\r\ncontent-length: ${body.length}\r\n\r\n`, "latin1");
  const idle: Connection[] = [];
  const waiting: ((connection: Connection) => void)[] = [];
  const all: Connection[] = [];
  const release = (connection: Connection) => {
    const next = waiting.shift();
    if (next) next(connection);
    else idle.push(connection);
  };
  for (let i = 0; i < CONNECTIONS; i++) {
    const socket = connectTcp(port, "127.0.0.1");
    socket.setNoDelay(true);
    await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    const connection: Connection = { socket, received: undefined, answered: undefined };
    socket.on("data", (chunk: Buffer) => {
      const received = connection.received ? Buffer.concat([connection.received, chunk]) : chunk;
      const headEnd = received.indexOf("\r\n\r\n");
      if (headEnd < 0) {
        connection.received = received;
        return;
      }
      const at = received.indexOf("content-length: ", 0, "latin1");
      let length = 0;
      for (let pos = at + 16; at >= 0 && received[pos]! >= 0x30 && received[pos]! <= 0x39; pos++)
        length = length * 10 + received[pos]! - 0x30;
      if (received.length < headEnd + 4 + length) {
        connection.received = received;
        return;
      }
      connection.received = undefined;
      const status = Number(received.toString("latin1", 9, 12));
      const answered = connection.answered!;
      connection.answered = undefined;
      release(connection);
      answered(status);
    });
    all.push(connection);
    idle.push(connection);
  }
  return {
    name: "socket",
    send: async () => {
      const connection = idle.pop() ?? (await new Promise<Connection>((resolve) => waiting.push(resolve)));
      return new Promise((resolve) => {
        connection.answered = resolve;
        connection.socket.cork();
        connection.socket.write(head);
        connection.socket.write(body);
        connection.socket.uncork();
      });
    },
    close: async () => {
      for (const connection of all) connection.socket.destroy();
    },
  };
}

runBenchmark(async (cleanup) => {
  const loadAverageAtStart = os.loadavg();
  const sink = await WebhookSinkChild.start(REPO_ROOT);
  cleanup.add("stop the webhook sink", () => sink.stop());
  const origin = `http://127.0.0.1:${sink.port}`;
  const sides = [requestSide(origin), dispatchSide(origin), await socketSide(sink.port)];
  for (const side of sides) cleanup.add(`close the ${side.name} side`, () => side.close());

  const timeRound = async (side: Side) => {
    const before = process.cpuUsage();
    const started = performance.now();
    await runLanes(CONNECTIONS, params.requests, async () => {
      const status = await side.send();
      if (status !== 200) throw new Error(`${side.name}: the sink answered ${status}`);
    });
    const cpu = process.cpuUsage(before);
    return {
      cpuMicrosPerRequest: (cpu.user + cpu.system) / params.requests,
      requestsPerSecond: params.requests / ((performance.now() - started) / 1000),
    };
  };
  console.log(`${params.requests} POSTs of ${body.length} bytes a round, ${CONNECTIONS} connections and in flight; warming up …`);
  for (const side of sides) await timeRound(side);
  const rounds: { side: Side["name"]; cpuMicrosPerRequest: number; requestsPerSecond: number }[] = [];
  for (let round = 0; round < params.rounds; round++) {
    // Alternating the order, so a drift of the machine's speed favours none.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const result = await timeRound(side);
      rounds.push({ side: side.name, ...result });
      console.log(
        `  ${side.name.padEnd(9)} ${result.cpuMicrosPerRequest.toFixed(1)} µs CPU a request, ${Math.round(result.requestsPerSecond).toLocaleString("en-US")} requests/s`,
      );
    }
  }
  const mean = (name: Side["name"], key: "cpuMicrosPerRequest" | "requestsPerSecond") => {
    const of = rounds.filter((round) => round.side === name);
    return of.reduce((sum, round) => sum + round[key], 0) / of.length;
  };
  const reference = mean("request", "cpuMicrosPerRequest");
  const summary = Object.fromEntries(
    sides.map((side) => [
      side.name,
      {
        cpuMicrosPerRequest: Number(mean(side.name, "cpuMicrosPerRequest").toFixed(1)),
        requestsPerSecond: Math.round(mean(side.name, "requestsPerSecond")),
        cpuAgainstRequest: Number((mean(side.name, "cpuMicrosPerRequest") / reference).toFixed(3)),
      },
    ]),
  );
  for (const [name, figures] of Object.entries(summary)) {
    console.log(`${name.padEnd(9)} ${figures.cpuMicrosPerRequest} µs CPU a request, ${figures.cpuAgainstRequest}× request()'s`);
  }
  const file = await writeResults(join(REPO_ROOT, "bench", "results"), "http-send", {
    benchmark: "http-send",
    date: new Date().toISOString(),
    parameters: { ...params, bodyBytes: body.length },
    rounds: rounds.map((round) => ({
      ...round,
      cpuMicrosPerRequest: Number(round.cpuMicrosPerRequest.toFixed(1)),
      requestsPerSecond: Math.round(round.requestsPerSecond),
    })),
    summary,
    machine: await machineFacts(REPO_ROOT, undefined, loadAverageAtStart),
  });
  console.log(`results: ${file}`);
});
