/**
 * The bare reference for the Segment HTTP path (bench/ingest-http.ts), run as
 * its own process like ingest (`node --import tsx bench/lib/http-reference.ts`):
 * a node:http server that reads each POST body, JSON.parses it, publishes the
 * raw body as one JetStream message and answers 200 {"success":true} once
 * JetStream acknowledged it. No authentication, validation or re-encoding:
 * the least any HTTP ingest must do to store a request durably.
 *
 * Settings from the environment: REFERENCE_NATS_URL, REFERENCE_SUBJECT (the
 * stream must exist). It connects as ingest does (libs/infra/platform connectBus),
 * so both publish through nats.js with the same options. Prints
 * `{"ready":true,"port":N}` once it listens; exits on SIGTERM or when stdin closes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { jetstream } from "@nats-io/jetstream";
import { connectBus, createLogger } from "@switchyard/platform";

const natsUrl = process.env.REFERENCE_NATS_URL;
const subject = process.env.REFERENCE_SUBJECT;
if (!natsUrl || !subject) throw new Error("REFERENCE_NATS_URL and REFERENCE_SUBJECT must be set");

const bus = await connectBus({
  servers: [natsUrl],
  name: "switchyard-bench-http-reference",
  logger: createLogger({ service: "bench-http-reference", level: "silent" }),
});
const js = jetstream(bus.nc);
const OK = Buffer.from('{"success":true}');

function answer(response: ServerResponse, status: number, body: Buffer): void {
  response.writeHead(status, { "content-type": "application/json", "content-length": String(body.length) });
  response.end(body);
}

function handle(request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    try {
      JSON.parse(body.toString("utf8"));
    } catch {
      answer(response, 400, Buffer.from('{"success":false,"code":"invalid_json"}'));
      return;
    }
    js.publish(subject!, body).then(
      () => answer(response, 200, OK),
      () => answer(response, 503, Buffer.from('{"success":false,"code":"unavailable"}')),
    );
  });
}

const server = createServer({ keepAliveTimeout: 65_000 }, handle);

function shutdown(): void {
  server.close();
  server.closeAllConnections();
  void bus.nc.drain().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2_000).unref();
}
process.on("SIGTERM", shutdown);
process.stdin.on("end", shutdown);
process.stdin.resume();

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port })}\n`);
});
