import type { Metadata } from "@grpc/grpc-js";
import { CONTROL_CHARACTERS_RULE_MESSAGE, hasControlCharacter, MAX_ID_LENGTH } from "@switchyard/calls";
import type { IngestBatchResponse, IngestCallResponse } from "@switchyard/contracts";
import { isServiceError, ServiceError, type AsyncService, type UnaryMethod } from "@switchyard/platform";
import { type WorkspaceView } from "@switchyard/workspace";
import type { CallAcceptor } from "./acceptor.js";
import { authenticate } from "./authenticate.js";
import { tooManyCalls } from "./batch-limits.js";
import type { IngestServiceWireServer } from "./grpc-definition.js";
import { grpcBatchCalls, grpcCall } from "./grpc-calls.js";
import type { IngestMetrics } from "./metrics.js";
import type { WireBatchRequest, WireCallRequest } from "@switchyard/wire";

/**
 * White space at either end of a batch id: NATS trims it from the Nats-Msg-Id
 * header, so "x " would be de-duplicated against "x" and silently dropped.
 * (\s is JavaScript's white space and line terminators; U+0085 is white space
 * to the server's Go as well, and a control character here.)
 */
const EDGE_WHITE_SPACE = /^\s|\s$/;

/**
 * switchyard.v1.IngestService. Serve it with `auth: "handler"` (callers
 * authenticate with write keys, checked here) and `metrics: false`: its own
 * metrics count refused requests, and the hot path carries nothing more.
 */
export function ingestGrpcService(deps: {
  workspace: WorkspaceView;
  acceptor: CallAcceptor;
  metrics: IngestMetrics;
}): AsyncService<IngestServiceWireServer> {
  const { workspace, acceptor, metrics } = deps;
  // Every refused request is counted by its status, whatever refused it.
  const unary =
    <Request, Response>(handler: UnaryMethod<Request, Response>): UnaryMethod<Request, Response> =>
    async (request, metadata) => {
      try {
        return await handler(request, metadata);
      } catch (error) {
        metrics.requestRejected("grpc", isServiceError(error) ? error.code.toLowerCase() : "internal");
        throw error;
      }
    };

  return {
    ingestBatch: unary(async (request: WireBatchRequest, metadata): Promise<IngestBatchResponse> => {
      const source = authenticate(workspace, authorizationOf(metadata));
      if (!request.ok) throw new ServiceError("INVALID_ARGUMENT", `request: is not a valid IngestBatchRequest (${request.problem})`);
      if (request.calls.length === 0) throw new ServiceError("INVALID_ARGUMENT", "calls: a batch needs at least one call");
      const overCount = tooManyCalls("calls", request.calls.length);
      if (overCount) throw new ServiceError("INVALID_ARGUMENT", overCount);
      if (!request.batchIdIsUtf8) throw new ServiceError("INVALID_ARGUMENT", "batch_id: must be valid UTF-8");
      if (request.batchId.length > MAX_ID_LENGTH)
        throw new ServiceError("INVALID_ARGUMENT", `batch_id: must be at most ${MAX_ID_LENGTH} characters`);
      // It becomes part of the Nats-Msg-Id header, where a line break would end the header early.
      // The same rule as a call's messageId (@switchyard/calls), which goes into headers too.
      if (hasControlCharacter(request.batchId)) throw new ServiceError("INVALID_ARGUMENT", `batch_id: ${CONTROL_CHARACTERS_RULE_MESSAGE}`);
      if (EDGE_WHITE_SPACE.test(request.batchId))
        throw new ServiceError("INVALID_ARGUMENT", "batch_id: must not begin or end with white space");
      const calls = grpcBatchCalls(request.calls);
      const result = await acceptor.accept({ source, transport: "grpc", batchId: request.batchId || undefined, calls });
      return {
        batchId: result.batchId,
        accepted: result.messageIds.length,
        messageIds: result.messageIds,
        rejections: result.rejections,
        duplicate: result.duplicate,
      };
    }),

    ingestCall: unary(async (request: WireCallRequest, metadata): Promise<IngestCallResponse> => {
      const source = authenticate(workspace, authorizationOf(metadata));
      if (!request.ok) throw new ServiceError("INVALID_ARGUMENT", `request: is not a valid IngestCallRequest (${request.problem})`);
      if (!request.call) throw new ServiceError("INVALID_ARGUMENT", "call: is required");
      const result = await acceptor.accept({ source, transport: "grpc", calls: [grpcCall(request.call)] });
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
