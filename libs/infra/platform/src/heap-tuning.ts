import { setFlagsFromString } from "node:v8";

/**
 * The Node options ingest and delivery run with (`npm start`, docker-compose.yml and the
 * benchmarks set them; docs/operations.md, "Node options"). Both allocate briskly per request
 * (ingest a body and a Call per call, delivery a body, a signature and a request per webhook), and
 * with V8's default young generation the objects of requests still in flight at each collection
 * are promoted and fill the old generation, so full collections follow each other under load.
 * 64 MB semi-spaces let them die young.
 */
export const BRISK_SERVICE_NODE_OPTIONS = "--max-semi-space-size=64";

/**
 * When V8 starts collecting the old generation, set by ingest and delivery on themselves at
 * start-up (Node refuses these in NODE_OPTIONS). By default V8 starts as soon as the old
 * generation's room before its limit is smaller than the young generation, which could be
 * promoted into it at once. With a small old generation (a few tens of MB live, a limit not much
 * higher) that holds again right after every full collection, so they follow each other. With
 * these, marking starts once the old generation has used 80 % of its limit (at once past 95 %),
 * whatever the young generation's size.
 */
export const OLD_GENERATION_V8_FLAGS = ["--incremental-marking-soft-trigger=80", "--incremental-marking-hard-trigger=95"] as const;

/** Sets OLD_GENERATION_V8_FLAGS on this process: call first thing in the service's entry point. */
export function applyOldGenerationFlags(): void {
  for (const flag of OLD_GENERATION_V8_FLAGS) setFlagsFromString(flag);
}
