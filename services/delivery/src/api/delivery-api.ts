import type { DeliveryServiceServer } from "@switchyard/contracts";
import { ServiceError, type AsyncService, type Logger } from "@switchyard/platform";
import { type Destination, type WorkspaceView } from "@switchyard/workspace";

import type { DeadLetters } from "../retries/dead-letters.js";
import type { AttemptPages } from "./attempt-pages.js";
import type { DeliveryStats } from "./delivery-stats.js";
import { kindOf } from "../kinds/index.js";
import { testActionMapping, type MappingTestDeps } from "../kinds/webhooks-actions/mapping-test.js";
import type { RetryQueue } from "../retries/retry-queue.js";

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

export interface DeliveryApiDeps extends MappingTestDeps {
  workspace: WorkspaceView;
  deadLetters: DeadLetters;
  retryQueue: RetryQueue;
  attempts: AttemptPages;
  stats: DeliveryStats;
  logger: Logger;
}

/**
 * switchyard.v1.DeliveryService: dead letters (list, replay), the attempt log
 * and counts. Serve it with `auth: "admin"`: the server checks the admin token.
 */
export function deliveryApi(deps: DeliveryApiDeps): AsyncService<DeliveryServiceServer> {
  const { logger } = deps;
  const limitOf = (limit: number) => Math.min(limit || DEFAULT_LIMIT, MAX_LIMIT);

  return {
    listDeadLetters: async (request) => {
      const limit = limitOf(request.limit);
      const entries = await deps.deadLetters.list({
        ...(request.destinationId ? { destinationId: request.destinationId } : {}),
        afterSequence: request.afterSequence,
        limit,
      });
      const last = entries.at(-1);
      return { entries, nextAfterSequence: entries.length === limit && last ? last.sequence : 0 };
    },

    replayDeadLetters: async (request) => {
      if (request.sequences.length === 0 && !request.destinationId)
        throw new ServiceError("INVALID_ARGUMENT", "sequences or destination_id: name what to replay");
      const sequences =
        request.sequences.length > 0
          ? request.sequences
          : (await deps.deadLetters.list({ destinationId: request.destinationId, limit: MAX_LIMIT * 100 })).map((e) => e.sequence);
      let replayed = 0;
      for (const sequence of sequences) {
        const deadLetter = await deps.deadLetters.get(sequence);
        const task = deadLetter?.task;
        if (!task) throw new ServiceError("NOT_FOUND", `sequences: no dead letter ${sequence}`);
        const destination: Destination | undefined = deps.workspace.destination(task.destinationId);
        if (!destination) throw new ServiceError("FAILED_PRECONDITION", `destination ${task.destinationId} no longer exists`);
        // A replay is a fresh delivery: every URL, a new window, due now.
        const now = new Date();
        await deps.retryQueue.schedule(
          { ...task, targetIndexes: kindOf(destination).targets(destination), windowStart: now, attemptsBefore: 0, notBefore: now },
          `replay:${sequence}`,
        );
        await deps.deadLetters.remove(sequence);
        replayed++;
      }
      logger.info({ replayed }, "replayed dead letters");
      return { replayed };
    },

    listDeliveryAttempts: (request) =>
      deps.attempts.list({
        ...(request.destinationId ? { destinationId: request.destinationId } : {}),
        ...(request.messageId ? { messageId: request.messageId } : {}),
        outcomes: request.outcomes,
        ...(request.since ? { since: request.since } : {}),
        ...(request.before ? { before: request.before } : {}),
        limit: limitOf(request.limit),
        pageToken: request.pageToken,
      }),

    getDeliveryAttempt: async (request) => {
      if (!request.attemptId) throw new ServiceError("INVALID_ARGUMENT", "attempt_id: required");
      return { attempt: await deps.attempts.get(request.attemptId) };
    },

    testActionMapping: (request) => testActionMapping(deps, request),

    getDeliveryStats: async (request) => {
      const counts = await deps.stats.counts(request.destinationId || undefined);
      return {
        destinations: [...counts].map(([destinationId, c]) => ({
          destinationId,
          delivered: c.delivered,
          failedAttempts: c.failedAttempts,
          deadLettered: c.deadLettered,
        })),
      };
    },
  };
}
