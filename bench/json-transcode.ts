/**
 * In-process cost of turning a Segment /v1/batch body into Call bytes:
 * `npm run bench:json-transcode [-- --bodies N --rounds N --runs N]`.
 *
 * The same 100-call bodies as bench:ingest-http (segment-bodies.ts,
 * sample-calls.ts), each read two ways, both in this process, one after the
 * other:
 *  - parse + encode: ingest's straightforward HTTP path, the body decoded to
 *    text, JSON.parse, each call copied as the batch endpoint copies it, then
 *    encodeJsonCall;
 *  - transcode: transcodeBatchBody straight from the bytes.
 * Reports µs per call, best of --runs runs (the machine may be shared: the
 * load average is printed with the figures). No service, no bus, no network.
 */
import os from "node:os";
import { parseArgs } from "node:util";
import { AcceptTime, encodeJsonCall, transcodeBatchBody } from "@switchyard/wire";
import { batchForms } from "./lib/segment-bodies.js";
import { seededRandom } from "./lib/sample-calls.js";

const { values } = parseArgs({
  options: {
    bodies: { type: "string", default: "20" },
    rounds: { type: "string", default: "100" },
    runs: { type: "string", default: "7" },
  },
});
const bodyCount = Number(values.bodies);
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const CALLS_PER_BODY = 100;

const forms = batchForms(seededRandom(20), bodyCount, CALLS_PER_BODY);
const bodies = forms.map((form) => Buffer.from(form.json.bytes));
const acceptTime = new AcceptTime(new Date());

function parseAndEncode(body: Buffer): number {
  const json = JSON.parse(body.toString("utf8")) as { batch: Record<string, unknown>[] };
  let fast = 0;
  for (const call of json.batch) if (encodeJsonCall({ ...call }, acceptTime)) fast++;
  return fast;
}

function transcode(body: Buffer): number {
  const batch = transcodeBatchBody(body, acceptTime);
  if (!batch) return 0;
  let fast = 0;
  for (const call of batch.calls) if (call.fast) fast++;
  return fast;
}

/** µs per call over `rounds` passes over every body; checks every call took the fast path. */
function timeOf(read: (body: Buffer) => number): number {
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) {
    for (const body of bodies) {
      if (read(body) !== CALLS_PER_BODY) throw new Error(`${read.name}: not every call took the fast path`);
    }
  }
  return Number(process.hrtime.bigint() - start) / 1_000 / (rounds * bodies.length * CALLS_PER_BODY);
}

const meanBodyBytes = bodies.reduce((sum, body) => sum + body.length, 0) / bodies.length;
console.log(
  `${bodies.length} bodies of ${CALLS_PER_BODY} calls, ${Math.round(meanBodyBytes)} bytes each on average; load ${os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")}`,
);
// Warm both up before timing.
timeOf(parseAndEncode);
timeOf(transcode);
const best = { parseAndEncode: Infinity, transcode: Infinity };
for (let run = 0; run < runs; run++) {
  best.parseAndEncode = Math.min(best.parseAndEncode, timeOf(parseAndEncode));
  best.transcode = Math.min(best.transcode, timeOf(transcode));
}
console.log(`parse + encode: ${best.parseAndEncode.toFixed(2)} µs per call (best of ${runs})`);
console.log(`transcode:      ${best.transcode.toFixed(2)} µs per call (best of ${runs})`);
console.log(
  `load after: ${os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")}`,
);
