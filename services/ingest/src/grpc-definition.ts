import type { handleUnaryCall, UntypedServiceImplementation } from "@grpc/grpc-js";
import { IngestServiceService, type IngestBatchResponse, type IngestCallResponse } from "@switchyard/contracts";
import { parseIngestBatchRequest, parseIngestCallRequest, type WireBatchRequest, type WireCallRequest } from "@switchyard/wire";

/**
 * The IngestService definition the server registers: the generated one, with
 * request deserializers that leave the calls as protobuf bytes for the fast
 * path (grpc-calls.ts) instead of decoding them into objects. Responses are
 * serialized by the generated code; clients and reflection are unaffected.
 */
export const ingestServiceDefinition = {
  ingestBatch: { ...IngestServiceService.ingestBatch, requestDeserialize: parseIngestBatchRequest },
  ingestCall: { ...IngestServiceService.ingestCall, requestDeserialize: parseIngestCallRequest },
} as const;

/** The handlers ingestServiceDefinition needs. */
export interface IngestServiceWireServer extends UntypedServiceImplementation {
  ingestBatch: handleUnaryCall<WireBatchRequest, IngestBatchResponse>;
  ingestCall: handleUnaryCall<WireCallRequest, IngestCallResponse>;
}
