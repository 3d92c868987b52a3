/**
 * In-process cost of ingest's gRPC fast path per call: `npm run bench:call-scan [-- --calls N --rounds N --runs N]`.
 *
 * The same sample calls as bench:ingest (sample-calls.ts), each as its own Call bytes, read two
 * ways one after the other in this process:
 *  - scan + quick rules: what ingest does with a call of an IngestBatch (scanCall, passesQuickly);
 *  - decode (the reference): the generated Call.decode of the same bytes.
 * Reports µs per call, best of --runs runs, and the scan's ratio to decoding. No service, no bus:
 * the figure a change to the scan or the Struct walk is measured by before it reaches bench:ingest.
 */
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { passesQuickly } from "@switchyard/calls";
import { Call } from "@switchyard/contracts";
import { scanCall } from "@switchyard/wire";
import { machineFacts, writeResults } from "./lib/run-support.js";
import { encodedCalls, seededRandom } from "./lib/sample-calls.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "50" },
    runs: { type: "string", default: "7" },
  },
});
const callCount = Number(values.calls);
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

const calls = encodedCalls(seededRandom(37), callCount);

function scan(): number {
  let passed = 0;
  for (const bytes of calls) if (passesQuickly(scanCall(bytes))) passed++;
  return passed;
}

function decode(): number {
  let decoded = 0;
  for (const bytes of calls) if (Call.decode(bytes).payload) decoded++;
  return decoded;
}

/** µs per call of `rounds` passes over every call; checks each pass read every call. */
function timeOf(work: () => number): number {
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) if (work() !== calls.length) throw new Error(`${work.name}: not every call was read`);
  return Number(process.hrtime.bigint() - start) / 1_000 / (rounds * calls.length);
}

const loadAtStart = os.loadavg();
timeOf(scan);
timeOf(decode);
const best = { scan: Infinity, decode: Infinity };
for (let run = 0; run < runs; run++) {
  best.scan = Math.min(best.scan, timeOf(scan));
  best.decode = Math.min(best.decode, timeOf(decode));
}
const ratio = best.scan / best.decode;
console.log(`${calls.length} sample calls, ${rounds} rounds, best of ${runs} runs`);
console.log(`scan + quick rules: ${best.scan.toFixed(2)} µs per call`);
console.log(`Call.decode:        ${best.decode.toFixed(2)} µs per call`);
console.log(`scan / decode: ${ratio.toFixed(2)}×`);
const path = await writeResults(new URL("results", import.meta.url).pathname, "call-scan", {
  benchmark: "call-scan",
  date: new Date().toISOString(),
  parameters: { calls: callCount, rounds, runs },
  microsPerCall: best,
  scanOverDecode: ratio,
  machine: await machineFacts(REPO_ROOT, undefined, loadAtStart),
});
console.log(`results: ${path}`);
