import type { Metadata } from "@grpc/grpc-js";
import { MAX_BATCH_BYTES, MAX_ID_LENGTH, protoCallToJson } from "@switchyard/calls";
import type {
  IngestBatchRequest,
  IngestBatchResponse,
  IngestCallRequest,
  IngestCallResponse,
  IngestServiceServer,
} from "@switchyard/contracts";
import { ServiceError, unaryHandler as unary, type Logger, type WorkspaceView } from "@switchyard/platform";
import type { CallAcceptor } from "./acceptor.js";
import { authenticate } from "./authenticate.js";

export function ingestGrpcService(deps: { workspace: WorkspaceView; acceptor: CallAcceptor; logger: Logger }): IngestServiceServer {
  const { workspace, acceptor, logger } = deps;

  return {
    ingestBatch: unary(logger, async (request: IngestBatchRequest, metadata): Promise<IngestBatchResponse> => {
      const source = authenticate(workspace, authorizationOf(metadata));
      if (request.calls.length === 0) throw new ServiceError("INVALID_ARGUMENT", "calls: a batch needs at least one call");
      if (request.batchId.length > MAX_ID_LENGTH)
        throw new ServiceError("INVALID_ARGUMENT", `batch_id: must be at most ${MAX_ID_LENGTH} characters`);
      const calls = request.calls.map(protoCallToJson);
      const callBytes = calls.map((call) => Buffer.byteLength(JSON.stringify(call), "utf8"));
      const total = callBytes.reduce((sum, bytes) => sum + bytes, 0);
      if (total > MAX_BATCH_BYTES) {
        throw new ServiceError(
          "INVALID_ARGUMENT",
          `batch is ${total} bytes of JSON; the limit is ${MAX_BATCH_BYTES} bytes (500 KB): split it`,
        );
      }
      const result = await acceptor.accept({ source, batchId: request.batchId || undefined, calls, callBytes });
      return {
        batchId: result.batchId,
        accepted: result.messageIds.length,
        messageIds: result.messageIds,
        rejections: result.rejections,
        duplicate: result.duplicate,
      };
    }),

    ingestCall: unary(logger, async (request: IngestCallRequest, metadata): Promise<IngestCallResponse> => {
      const source = authenticate(workspace, authorizationOf(metadata));
      if (!request.call) throw new ServiceError("INVALID_ARGUMENT", "call: is required");
      const result = await acceptor.accept({ source, calls: [protoCallToJson(request.call)] });
      const rejection = result.rejections[0];
      if (rejection) throw new ServiceError("INVALID_ARGUMENT", `${rejection.message} (rule: ${rejection.rule})`);
      return { messageId: result.messageIds[0] ?? "", duplicate: result.duplicate };
    }),
  };
}

function authorizationOf(metadata: Metadata): string | undefined {
  const value = metadata.get("authorization")[0];
  return typeof value === "string" ? value : undefined;
}
