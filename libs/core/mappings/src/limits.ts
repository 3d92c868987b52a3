/*
 * The Webhooks (Actions) kind's limits and defaults: plain values, with nothing of Segment's
 * packages behind them, so the console's editor (in the browser) reads the same ones the services
 * check (`@switchyard/mappings/limits`).
 */

/** Most mappings one destination holds. */
export const MAX_ACTION_MAPPINGS = 20;
/** Longest mapping name. */
export const MAX_MAPPING_NAME_CHARS = 100;
/** The methods a mapping may send with. */
export const ACTION_METHODS = ["POST", "PUT", "PATCH"] as const;
/** A batch's size bounds and default (Segment's UI offers 1000 and takes up to 4000). */
export const MAX_BATCH_SIZE = 4000;
export const DEFAULT_BATCH_SIZE = 1000;
/** How long a batch's first call waits for the batch to fill: bounds and default. */
export const MIN_BATCH_WAIT_MS = 10;
export const MAX_BATCH_WAIT_MS = 60_000;
export const DEFAULT_BATCH_WAIT_MS = 1_000;
