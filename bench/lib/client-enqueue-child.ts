/**
 * One library's enqueue rate and heap per queued call, in a process of its own (run by
 * bench/client.ts with --expose-gc): `--library switchyard|segment --calls N`.
 *
 * Sending is kept out of the picture: Switchyard's client gets a flushAt above N; the Segment
 * client cannot hold more than 480 KB in its batch, so it sends the rest to a local server that
 * accepts connections and never answers, and holds those requests (its requests time out only
 * after an hour). The heap counted is what the library retains: heapUsed plus ArrayBuffer memory
 * after full GCs, less the baseline measured before the messages were generated (the messages are
 * dropped before the last measurement, so whatever the library keeps of them counts).
 *
 * The rate is given twice: per second of wall-clock time, and per second of CPU time the process
 * used (all its threads, GC included). On a shared, loaded machine the wall-clock rate mostly
 * measures how often the process got a core; the CPU-time rate is the library's own cost.
 *
 * The messages are made before the clock starts, then a full GC moves them out of the young
 * generation, for both libraries alike. Without it, the first scavenge in the timed loop copies all
 * N freshly made messages, which the benchmark keeps alive, not the library: about 20 ms, a tenth of
 * a Switchyard run of 20,000 calls and under 1% of a Segment one. (A message that an application
 * makes and drops dies young and costs no copying. If anything this favours a library that keeps
 * the messages themselves: they are already old. What it keeps is still in the heap counted.)
 */
import { createServer, type AddressInfo, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { Analytics as SegmentAnalytics } from "@segment/analytics-node";
import { Analytics } from "../../libs/analytics/src/index.js";
import { clientMessages, type ClientMessage } from "./client-messages.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function retainedBytes(): number {
  for (let i = 0; i < 4; i++) gc!();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const WARMUP_CALLS = 20_000;
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { library: { type: "string" }, calls: { type: "string", default: "50000" } } });
  const calls = Number(values.calls);
  const sockets: Socket[] = [];
  const blackHole = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => blackHole.listen(0, "127.0.0.1", resolve));
  const port = (blackHole.address() as AddressInfo).port;

  let enqueue: (call: ClientMessage) => void;
  if (values.library === "switchyard") {
    const client = new Analytics("wk_bench", {
      endpoint: `127.0.0.1:${port}`,
      flushAt: calls + WARMUP_CALLS + 1,
      flushAfter: 3_600_000,
      maxQueueSize: calls + WARMUP_CALLS + 1,
      maxQueueBytes: 1024 * 1024 * 1024,
    });
    enqueue = ({ type, message }) => client[type](message as never);
  } else if (values.library === "segment") {
    const client = new SegmentAnalytics({
      writeKey: "wk_bench",
      host: `http://127.0.0.1:${port}`,
      flushAt: calls + WARMUP_CALLS + 1,
      flushInterval: 3_600_000,
      httpRequestTimeout: 3_600_000,
    });
    client.on("error", () => {});
    enqueue = ({ type, message }) => client[type](message as never);
  } else throw new Error("--library switchyard|segment");

  // Warm up the JIT on other calls, then measure.
  for (const call of clientMessages(WARMUP_CALLS, 7)) enqueue(call);
  await settle();
  const baseline = retainedBytes();
  let messages: ClientMessage[] | undefined = clientMessages(calls);
  gc!();
  const start = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  for (const call of messages) enqueue(call);
  // The Segment client queues asynchronously: count the time until its pending work ran.
  await settle();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  messages = undefined;
  const retained = retainedBytes() - baseline;
  process.stdout.write(
    `${JSON.stringify({
      library: values.library,
      calls,
      seconds,
      callsPerSecond: Math.round(calls / seconds),
      cpuSeconds,
      callsPerCpuSecond: Math.round(calls / cpuSeconds),
      heapBytesPerCall: Math.round(retained / calls),
    })}\n`,
  );
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
