import type { Call, DeliveryTask } from "@switchyard/contracts";
import type { OutcomeTally } from "./outcome-reports.js";
import { outgoingCall, type OutgoingCall } from "./outgoing-calls.js";

/**
 * One round of requests for one call to one destination: what the requests
 * need, and the round as the DeliveryTask the retry path stores should it
 * fail. A first attempt's task (and with it the decoded call) is made only then.
 */
export interface Round {
  readonly call: OutgoingCall;
  readonly destinationId: string;
  readonly sourceId: string;
  /** The number of this round's attempts (1 for the first), as the attempt log shows it. */
  readonly attempt: number;
  /** The targets this round sends to, by position (see DestinationKind.targets). */
  readonly targetIndexes: number[];
  /** Where the call's retry window starts. */
  readonly windowStart: Date;
  /** Where what comes of the round is counted, for the handled message's usage report. */
  readonly tally: OutcomeTally | undefined;
  /** The round as a task; its attemptsBefore excludes this round. */
  task(): DeliveryTask;
}

export interface FirstRoundTarget {
  sourceId: string;
  destinationId: string;
  targetIndexes: number[];
  windowStart: Date;
}

/** A call's first round (normally to every URL): nothing tried yet. */
export function firstRoundOf(call: OutgoingCall, to: FirstRoundTarget, tally?: OutcomeTally): Round {
  return {
    call,
    destinationId: to.destinationId,
    sourceId: to.sourceId,
    attempt: 1,
    targetIndexes: to.targetIndexes,
    windowStart: to.windowStart,
    tally,
    task: () => firstTask(call.call(), to),
  };
}

/** A call's delivery to a destination before its first round: nothing tried yet. */
export function firstTask(call: Call, to: FirstRoundTarget): DeliveryTask {
  return { ...to, call, attemptsBefore: 0, notBefore: undefined, lastFailure: undefined };
}

/** The next round of a stored task, to the given targets. */
export function retryRoundOf(task: DeliveryTask, targetIndexes: number[], tally?: OutcomeTally): Round {
  const round: DeliveryTask = { ...task, targetIndexes };
  return {
    call: outgoingCall(task.call!),
    destinationId: task.destinationId,
    sourceId: task.sourceId,
    attempt: task.attemptsBefore + 1,
    targetIndexes,
    windowStart: task.windowStart ?? new Date(),
    tally,
    task: () => round,
  };
}
