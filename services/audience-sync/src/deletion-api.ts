import { randomUUID } from "node:crypto";
import { Call, type DeletionServiceServer } from "@switchyard/contracts";
import { ServiceError, type AsyncService, type Logger } from "@switchyard/platform";
import { type WorkspaceView } from "@switchyard/workspace";
import { deterministicId, type BatchPublisher } from "@switchyard/bus";
import type { AudienceMetrics } from "./metrics.js";

/**
 * switchyard.v1.DeletionService: a deletion request for a user becomes one
 * `delete` call per affected source that has an enabled webhook destination,
 * published on the calls stream and so delivered and retried like any call.
 * Serve it with `auth: "admin"`: the server checks the admin token.
 */
export function deletionApi(deps: {
  workspace: WorkspaceView;
  emitter: BatchPublisher;
  metrics: AudienceMetrics;
  logger: Logger;
}): AsyncService<DeletionServiceServer> {
  return {
    requestDeletion: async (request) => {
      if (request.userId === "") throw new ServiceError("INVALID_ARGUMENT", "user_id: is required");
      if (request.requestId.length > 128) throw new ServiceError("INVALID_ARGUMENT", "request_id: must be at most 128 characters");
      const requestId = request.requestId || randomUUID();
      const sourceIds = request.sourceIds.length > 0 ? request.sourceIds : deps.workspace.sourceIds();
      for (const [i, sourceId] of request.sourceIds.entries()) {
        if (!deps.workspace.source(sourceId)) throw new ServiceError("NOT_FOUND", `source_ids[${i}]: unknown source "${sourceId}"`);
      }

      const notified: string[] = [];
      const now = new Date();
      for (const sourceId of new Set(sourceIds)) {
        if (deps.workspace.webhookDestinationsOf(sourceId).length === 0) continue;
        const call = Call.fromPartial({
          messageId: deterministicId("delete", sourceId, requestId, request.userId),
          userId: request.userId,
          timestamp: now,
          receivedAt: now,
          payload: { $case: "delete", value: {} },
        });
        await deps.emitter.publishCalls(sourceId, `delete:${deterministicId(requestId, request.userId)}`, [call]);
        deps.metrics.emitted("deletion", 1);
        notified.push(sourceId);
      }
      deps.logger.info({ requestId, notified }, "deletion request forwarded");
      return { requestId, notifiedSourceIds: notified };
    },
  };
}
