/**
 * Webhook receivers for the delivery and pipeline benchmarks, run as their own process
 * (`node --import tsx bench/lib/webhook-sink.ts`) so they never share an event
 * loop with the service or the benchmark driver. One node:http server on
 * 127.0.0.1 answers every POST with 200 once its body has arrived, counts
 * requests per path and records when each arrived (Date.now(), the clock
 * every process on the machine shares).
 *
 * Control channel: JSON lines. On start it prints `{"ready":true,"port":N}`
 * on stdout; then it reads commands `{"id":n,"cmd":...}` from stdin and
 * answers each with `{"id":n,"result":...}` (or `"error"`) on stdout:
 *  - `hold {path, ms}`: requests to `path` are answered only after `ms`.
 *  - `hostile {path, kind, bytes?}`: requests to `path` misbehave: `hang`
 *    never answers (the connection stays open until the client gives up),
 *    `huge` answers 200 with a body of `bytes` (default 100 MB, one buffer
 *    shared by every response), `reset` resets the connection (TCP RST).
 *  - `latency {path}`: also parse bodies on `path` and keep, per request,
 *    its arrival time minus the body's `timestamp`.
 *  - `messageIds {path}`: also read each body's top-level messageId on
 *    `path` (found as text, not parsed: this receiver should cost little)
 *    and count distinct ones and repeats.
 *  - `idCounts {path}`: how many requests on `path` carried a messageId,
 *    how many distinct, and how many bodies had none.
 *  - `stats`: per path, count and first/last arrival.
 *  - `arrivals {paths}`: arrival times on those paths, in arrival order.
 *  - `latencies {path, from, to}`: (timestamp, latency) samples whose body
 *    timestamp lies in [from, to).
 *  - `reset`: forget everything recorded (not the hold/latency settings).
 *  - `exit`: close the server and exit.
 * `WebhookSinkChild` (webhook-sink-child.ts) is the parent's side.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { createInterface } from "node:readline";

/** A growable array of numbers without boxing. */
class Numbers {
  private values = new Float64Array(4096);
  length = 0;

  push(value: number): void {
    if (this.length === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.length++] = value;
  }

  toArray(): number[] {
    return Array.from(this.values.subarray(0, this.length));
  }

  get(index: number): number {
    return this.values[index] ?? Number.NaN;
  }
}

interface PathRecord {
  arrivals: Numbers;
  /** Latency paths only: body timestamp and arrival − timestamp, per request. */
  timestamps: Numbers;
  latencies: Numbers;
}

const records = new Map<string, PathRecord>();
const holdMs = new Map<string, number>();
type HostileKind = "hang" | "huge" | "reset";
const hostile = new Map<string, HostileKind>();
let hugeBody = Buffer.alloc(0);
const latencyPaths = new Set<string>();
/** Per path: messageIds seen, and bodies without one. */
const idPaths = new Map<string, { seen: Set<string>; total: number; missing: number }>();
const MESSAGE_ID_FIELD = '"messageId":"';
const timers = new Set<NodeJS.Timeout>();
const sockets = new Set<Socket>();
let badBodies = 0;

function recordOf(path: string): PathRecord {
  let record = records.get(path);
  if (!record) {
    record = { arrivals: new Numbers(), timestamps: new Numbers(), latencies: new Numbers() };
    records.set(path, record);
  }
  return record;
}

function handle(request: IncomingMessage, response: ServerResponse): void {
  const arrivedAt = Date.now();
  const path = request.url ?? "";
  const record = recordOf(path);
  record.arrivals.push(arrivedAt);
  const answer = () => {
    if (response.destroyed) return;
    response.writeHead(200, { "content-length": "0" });
    response.end();
  };

  if (latencyPaths.has(path)) {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { timestamp?: unknown };
        const timestamp = typeof body.timestamp === "string" ? Date.parse(body.timestamp) : Number.NaN;
        if (Number.isNaN(timestamp)) throw new Error("no timestamp");
        record.timestamps.push(timestamp);
        record.latencies.push(arrivedAt - timestamp);
      } catch {
        badBodies++;
      }
      answer();
    });
    return;
  }

  const ids = idPaths.get(path);
  if (ids) {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString("latin1");
      // The webhook body writer puts messageId after the payload's fields, so its first occurrence is the call's own.
      const at = text.indexOf(MESSAGE_ID_FIELD);
      const end = at < 0 ? -1 : text.indexOf('"', at + MESSAGE_ID_FIELD.length);
      if (end < 0) ids.missing++;
      else {
        ids.total++;
        ids.seen.add(text.slice(at + MESSAGE_ID_FIELD.length, end));
      }
      answer();
    });
    return;
  }

  request.resume();
  const kind = hostile.get(path);
  if (kind === "hang") return; // never answered: the client's timeout ends it
  if (kind === "reset") {
    request.socket.resetAndDestroy();
    return;
  }
  if (kind === "huge") {
    request.on("end", () => {
      if (response.destroyed) return;
      response.writeHead(200, { "content-length": String(hugeBody.length), "content-type": "application/octet-stream" });
      response.end(hugeBody);
    });
    return;
  }
  const hold = holdMs.get(path);
  if (hold === undefined) {
    request.on("end", answer);
    return;
  }
  const timer = setTimeout(() => {
    timers.delete(timer);
    answer();
  }, hold);
  timers.add(timer);
  response.on("close", () => {
    clearTimeout(timer);
    timers.delete(timer);
  });
}

const server = createServer(handle);
// Keep the delivery service's connections open between phases; a held request must not be cut by the server.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.on("connection", (socket: Socket) => {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
});

type Command = {
  id: number;
  cmd: string;
  path?: string;
  paths?: string[];
  ms?: number;
  from?: number;
  to?: number;
  kind?: string;
  bytes?: number;
};

function run(command: Command): unknown {
  switch (command.cmd) {
    case "hold":
      holdMs.set(requirePath(command), command.ms ?? 0);
      return null;
    case "hostile": {
      const kind = command.kind;
      if (kind !== "hang" && kind !== "huge" && kind !== "reset") throw new Error(`hostile: kind must be hang, huge or reset, got ${kind}`);
      if (kind === "huge") {
        const bytes = command.bytes ?? 100 * 1024 * 1024;
        if (hugeBody.length !== bytes) hugeBody = Buffer.alloc(bytes, "x");
      }
      hostile.set(requirePath(command), kind);
      return null;
    }
    case "latency":
      latencyPaths.add(requirePath(command));
      return null;
    case "messageIds":
      idPaths.set(requirePath(command), { seen: new Set(), total: 0, missing: 0 });
      return null;
    case "idCounts": {
      const ids = idPaths.get(requirePath(command));
      return { total: ids?.total ?? 0, distinct: ids?.seen.size ?? 0, missing: ids?.missing ?? 0 };
    }
    case "stats":
      return {
        badBodies,
        openConnections: sockets.size,
        paths: Object.fromEntries(
          [...records].map(([path, record]) => [
            path,
            { count: record.arrivals.length, firstAt: record.arrivals.get(0), lastAt: record.arrivals.get(record.arrivals.length - 1) },
          ]),
        ),
      };
    case "arrivals":
      return Object.fromEntries((command.paths ?? []).map((path) => [path, records.get(path)?.arrivals.toArray() ?? []]));
    case "latencies": {
      const record = records.get(requirePath(command));
      const from = command.from ?? -Infinity;
      const to = command.to ?? Infinity;
      const samples: number[] = [];
      let before = 0;
      let after = 0;
      for (let i = 0; record && i < record.timestamps.length; i++) {
        const timestamp = record.timestamps.get(i);
        if (timestamp < from) before++;
        else if (timestamp >= to) after++;
        else samples.push(record.latencies.get(i));
      }
      return { samples, before, after };
    }
    case "reset":
      records.clear();
      for (const ids of idPaths.values()) Object.assign(ids, { seen: new Set(), total: 0, missing: 0 });
      badBodies = 0;
      return null;
    case "exit":
      setImmediate(shutdown);
      return null;
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
}

function requirePath(command: Command): string {
  if (!command.path) throw new Error(`${command.cmd}: path is required`);
  return command.path;
}

function shutdown(): void {
  for (const timer of timers) clearTimeout(timer);
  for (const socket of sockets) socket.destroy();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1_000).unref();
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "") return;
  let id = -1;
  try {
    const command = JSON.parse(line) as Command;
    id = command.id;
    process.stdout.write(`${JSON.stringify({ id, result: run(command) })}\n`);
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ id, error: error instanceof Error ? error.message : String(error) })}\n`);
  }
});
// The parent went away: nothing will ever stop us otherwise.
process.stdin.on("end", shutdown);
process.on("SIGTERM", shutdown);

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
