import { MAX_BATCH_BYTES, MAX_BATCH_CALLS, SMALLEST_CALL_JSON_BYTES } from "@switchyard/calls";

/** The refusal of a batch of `count` calls when that is more than any batch may hold; undefined when it is not. */
export function tooManyCalls(field: string, count: number): string | undefined {
  if (count <= MAX_BATCH_CALLS) return undefined;
  return (
    `${field}: a batch holds at most ${MAX_BATCH_CALLS} calls (${MAX_BATCH_BYTES / 1024} KB over the smallest valid call, ` +
    `${SMALLEST_CALL_JSON_BYTES} bytes of JSON); this one has ${count}: split it`
  );
}
