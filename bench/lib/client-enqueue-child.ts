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
 * Two things the benchmark itself does are kept out of the timed loop, for both libraries alike:
 *  - The messages are made before the clock starts, then a full GC moves them out of the young
 *    generation. Otherwise the first scavenge in the loop copies all of them (the benchmark keeps
 *    them alive, not the library), a cost that weighs on the faster library most. A message an
 *    application makes and drops dies young and costs no
 *    copying; if anything this favours a library that keeps the messages themselves (they are
 *    already old). What it keeps of them is still in the heap counted.
 *  - The forced GCs of the heap baseline (and the one above) come in a row, and V8 then drops the
 *    maps of objects that none is alive of, such as the per-call objects of a library, and with
 *    them the optimised code that relied on them: the next few thousand calls run slower while it
 *    is compiled again.
 *    So REWARM_CALLS more calls are made after the GCs and before the clock; they are queued
 *    calls like the others and count in the heap per call (retained / (REWARM_CALLS + N)).
 */
import { createServer, type AddressInfo, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { Analytics as SegmentAnalytics } from "@segment/analytics-node";
import { Analytics } from "@switchyard/analytics";
import { clientMessages, type ClientMessage } from "./client-messages.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function retainedBytes(): number {
  for (let i = 0; i < 4; i++) gc!();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const WARMUP_CALLS = 20_000;
/** Calls made after the forced GCs and before the clock starts (see the header); counted in the heap per call. */
const REWARM_CALLS = 5_000;
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
      flushAt: calls + WARMUP_CALLS + REWARM_CALLS + 1,
      flushAfter: 3_600_000,
      maxQueueSize: calls + WARMUP_CALLS + REWARM_CALLS + 1,
      maxQueueBytes: 1024 * 1024 * 1024,
    });
    enqueue = ({ type, message }) => client[type](message as never);
  } else if (values.library === "segment") {
    const client = new SegmentAnalytics({
      writeKey: "wk_bench",
      host: `http://127.0.0.1:${port}`,
      flushAt: calls + WARMUP_CALLS + REWARM_CALLS + 1,
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
  let messages: ClientMessage[] | undefined = clientMessages(REWARM_CALLS + calls);
  gc!();
  for (let index = 0; index < REWARM_CALLS; index++) enqueue(messages[index]!);
  await settle();
  const start = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  for (let index = REWARM_CALLS; index < messages.length; index++) enqueue(messages[index]!);
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
      heapBytesPerCall: Math.round(retained / (REWARM_CALLS + calls)),
    })}\n`,
  );
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
