/**
 * In-process CPU cost of a Webhooks (Actions) mapping per call: `npm run bench:mappings [-- --calls N --runs N]`.
 *
 * The same sample calls as the other benchmarks (sample-calls.ts), in one CallBatch as the bus
 * carries them, each made into what is sent, three ways, one after the other in this process:
 *  - none (the reference): the classic Webhooks body written straight from the batch's bytes, as
 *    delivery writes it for a destination without a mapping;
 *  - default mapping: the batch decoded, each call in Segment's event shape, its trigger tested,
 *    the request made with the default data ({"@path": "$."}), its body written;
 *  - typical mapping: the same with a mapped URL, a mapped header and a data mapping of paths, a
 *    template and a condition.
 * Reports µs per call, best of --runs runs, and each mapping's ratio to the reference. No
 * service, no bus, no network: the cost of the languages themselves.
 */
import os from "node:os";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { CallBatch } from "@switchyard/contracts";
import { callEvent, compileActionMappings, singleBody, type CompiledActionMapping } from "@switchyard/mappings";
import { JsonBytes, readCallBatch, walkCallBatch, WireReader, writeWebhookBody } from "@switchyard/wire";
import { machineFacts, writeResults } from "./lib/run-support.js";
import { sampleCall, seededRandom } from "./lib/sample-calls.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "10" },
    runs: { type: "string", default: "7" },
  },
});
const callCount = Number(values.calls);
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

const random = seededRandom(38);
const calls = Array.from({ length: callCount }, () => sampleCall(random));
const batch = CallBatch.encode({ batchId: "bench", sourceId: "web", receivedAt: new Date(), calls }).finish();
const bodies = new JsonBytes(1 << 20);

function mapping(fields: object): CompiledActionMapping {
  const compiled = compileActionMappings([
    { name: "bench", enabled: true, trigger: 'type = "track" or type = "identify" or type = "page"', ...fields },
  ]);
  if (!compiled.ok) throw new Error(compiled.problems.join("; "));
  return compiled.mappings[0]!;
}
const defaultMapping = mapping({ url: "https://hooks.example/all" });
const typicalMapping = mapping({
  url: { "@template": "https://hooks.example/{{type}}/{{userId}}" },
  headers: { "X-Event": { "@if": { exists: { "@path": "$.event" }, then: { "@path": "$.event" }, else: "none" } } },
  data: {
    id: { "@path": "$.messageId" },
    user: { "@path": "$.userId" },
    what: { "@template": "{{type}} {{event}}" },
    revenue: { "@path": "$.properties.revenue" },
    plan: { "@path": "$.traits.plan" },
    page: { url: { "@path": "$.properties.url" }, title: { "@path": "$.properties.title" } },
    at: { "@path": "$.timestamp" },
  },
});

function none(): number {
  let bytes = 0;
  walkCallBatch(new WireReader(batch), batch.length, {
    sourceId: () => undefined,
    receivedAt: () => undefined,
    call: (reader, start, end) => {
      bodies.start();
      writeWebhookBody(reader, start, end, bodies);
      bytes += bodies.finish().length;
    },
  });
  return bytes;
}

function mapped(compiled: CompiledActionMapping): () => number {
  return () => {
    let bytes = 0;
    for (const call of readCallBatch(batch).calls) {
      const event = callEvent(call);
      if (!compiled.trigger.matches(event)) continue;
      const made = compiled.request(event);
      if (!made.ok) throw new Error(made.reason);
      bytes += singleBody(made.request).length;
    }
    return bytes;
  };
}

/** µs per call of `rounds` passes over every call. */
function timeOf(work: () => number): number {
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; round++) work();
  return Number(process.hrtime.bigint() - start) / 1_000 / (rounds * calls.length);
}

const loadAtStart = os.loadavg();
const ways = { none, defaultMapping: mapped(defaultMapping), typicalMapping: mapped(typicalMapping) };
for (const work of Object.values(ways)) timeOf(work); // warm-up
const best: Record<keyof typeof ways, number> = { none: Infinity, defaultMapping: Infinity, typicalMapping: Infinity };
for (let run = 0; run < runs; run++) {
  for (const [name, work] of Object.entries(ways))
    best[name as keyof typeof ways] = Math.min(best[name as keyof typeof ways], timeOf(work));
}
const ratios = { defaultMapping: best.defaultMapping / best.none, typicalMapping: best.typicalMapping / best.none };
console.log(`${calls.length} sample calls, ${rounds} rounds, best of ${runs} runs`);
console.log(`none (classic body):  ${best.none.toFixed(2)} µs per call`);
console.log(`default mapping:      ${best.defaultMapping.toFixed(2)} µs per call (${ratios.defaultMapping.toFixed(1)}× none)`);
console.log(`typical mapping:      ${best.typicalMapping.toFixed(2)} µs per call (${ratios.typicalMapping.toFixed(1)}× none)`);
const path = await writeResults(new URL("results", import.meta.url).pathname, "mappings", {
  benchmark: "mappings",
  date: new Date().toISOString(),
  parameters: { calls: callCount, rounds, runs },
  microsPerCall: best,
  ratioToNone: ratios,
  machine: await machineFacts(REPO_ROOT, undefined, loadAtStart),
});
console.log(`results: ${path}`);
