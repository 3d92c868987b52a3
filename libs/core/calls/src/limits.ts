/** Largest call, measured as the UTF-8 size of its JSON. */
export const MAX_CALL_BYTES = 32 * 1024;
/** Largest batch: the HTTP body, or for gRPC the sum of its calls' JSON sizes. */
export const MAX_BATCH_BYTES = 500 * 1024;
/**
 * The JSON of the smallest call the rules accept, `{"type":"page","userId":"a"}`:
 * every call needs a type (page is the shortest) and a userId or anonymousId.
 */
export const SMALLEST_CALL_JSON_BYTES = Buffer.byteLength(JSON.stringify({ type: "page", userId: "a" }));
/**
 * The most calls a batch may hold: no batch within MAX_BATCH_BYTES holds more
 * calls that could all be valid. Checked before any call is read, so a request
 * of countless tiny or broken calls is refused at once instead of costing a
 * refusal each.
 */
export const MAX_BATCH_CALLS = Math.floor(MAX_BATCH_BYTES / SMALLEST_CALL_JSON_BYTES);
/** Longest messageId or batch id accepted. */
export const MAX_ID_LENGTH = 128;
