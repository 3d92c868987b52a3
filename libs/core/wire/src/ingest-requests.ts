import { isUtf8Bytes } from "@switchyard/calls";
import { IngestBatchRequestField, IngestCallRequestField } from "@switchyard/contracts";
import { decodeText, MalformedWireError, WireReader } from "./reader.js";
import { lengthTag } from "./tags.js";

/**
 * Light readers of the IngestService requests, used as gRPC request
 * deserializers: the calls stay protobuf bytes (views into the request, not
 * copies) for the call scanner. Like the generated decoder, the last batch_id
 * or call wins and unknown fields are skipped; unlike it, bytes that are not
 * valid wire data are reported instead of half-read.
 */

/**
 * `batchIdIsUtf8` is false when a batch_id's bytes are not UTF-8: decoded, they would read as
 * U+FFFD, and two different ids could become one (the second batch taken for a re-send).
 */
export type WireBatchRequest = { ok: true; batchId: string; batchIdIsUtf8: boolean; calls: Buffer[] } | { ok: false; problem: string };

export type WireCallRequest = { ok: true; call: Buffer | undefined } | { ok: false; problem: string };

const BATCH_ID = lengthTag(IngestBatchRequestField.BATCH_ID);
const CALLS = lengthTag(IngestBatchRequestField.CALLS);
const CALL = lengthTag(IngestCallRequestField.CALL);

/** IngestBatchRequest: a batch_id and repeated calls. */
export function parseIngestBatchRequest(request: Buffer): WireBatchRequest {
  const reader = new WireReader(request);
  const end = request.length;
  let batchId = "";
  let batchIdIsUtf8 = true;
  const calls: Buffer[] = [];
  try {
    while (reader.pos < end) {
      const tag = reader.tag(end);
      if (tag === BATCH_ID) {
        const length = reader.length(end);
        batchId = decodeText(request, reader.pos, reader.pos + length);
        // Once a request, on at most a few hundred bytes: the native check is cheap enough.
        if (!isUtf8Bytes(request.subarray(reader.pos, reader.pos + length))) batchIdIsUtf8 = false;
        reader.pos += length;
      } else if (tag === CALLS) {
        const length = reader.length(end);
        calls.push(request.subarray(reader.pos, reader.pos + length));
        reader.pos += length;
      } else reader.skipField(tag, end);
    }
  } catch (error) {
    return malformed(error);
  }
  return { ok: true, batchId, batchIdIsUtf8, calls };
}

/** IngestCallRequest: one call. */
export function parseIngestCallRequest(request: Buffer): WireCallRequest {
  const reader = new WireReader(request);
  const end = request.length;
  let call: Buffer | undefined;
  try {
    while (reader.pos < end) {
      const tag = reader.tag(end);
      if (tag === CALL) {
        const length = reader.length(end);
        call = request.subarray(reader.pos, reader.pos + length);
        reader.pos += length;
      } else reader.skipField(tag, end);
    }
  } catch (error) {
    return malformed(error);
  }
  return { ok: true, call };
}

function malformed(error: unknown): { ok: false; problem: string } {
  if (error instanceof MalformedWireError) return { ok: false, problem: error.message };
  throw error;
}
