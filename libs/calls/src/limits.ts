/** Largest call, measured as the UTF-8 size of its JSON. */
export const MAX_CALL_BYTES = 32 * 1024;
/** Largest batch: the HTTP body, or for gRPC the sum of its calls' JSON sizes. */
export const MAX_BATCH_BYTES = 500 * 1024;
/** Longest messageId or batch id accepted. */
export const MAX_ID_LENGTH = 128;
