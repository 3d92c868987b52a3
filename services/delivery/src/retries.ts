import type { JsMsg } from "@nats-io/jetstream";
import { DeliveryTask } from "@switchyard/contracts";
import type { Destination, Logger, WorkspaceView } from "@switchyard/platform";
import type { DestinationGates, Release } from "./destination-gate.js";
import { allUrlIndexes, fanOut, type FanOutResult } from "./fan-out.js";
import { roundOutcome } from "./first-attempts.js";
import { timingFromHeaders, timingOf } from "./retry-queue.js";
import type { Settler } from "./settle.js";
import type { WebhookSender } from "./webhook-sender.js";

/** How long a retry waits while its destination is disabled. */
const DISABLED_RECHECK_MS = 30_000;
/** Redelivery that comes this early is treated as due (timer granularity). */
const EARLY_TOLERANCE_MS = 5;
/** Nak deadlines this far away or more are rounded up to a multiple of it (see nakDelay). */
const NAK_GRID_MS = 1_000;

/**
 * The delay to nak a task with so that it comes back at `now + delayMs` or a
 * little later, never after the window's end. Whole milliseconds: nats-server
 * ignores a delay that is not a whole number of nanoseconds and redelivers at
 * once. Deadlines a second or more away fall on whole seconds: nats-server
 * walks every pending message of the consumer each time one of their deadlines
 * passes, so thousands of waiting tasks with scattered deadlines would keep it
 * scanning without pause; on a grid they share the scans.
 */
export function nakDelay(now: number, delayMs: number, windowEnd: number): number {
  const deadline = delayMs >= NAK_GRID_MS ? Math.ceil((now + delayMs) / NAK_GRID_MS) * NAK_GRID_MS : now + delayMs;
  return Math.max(1, Math.round(Math.min(deadline, windowEnd) - now));
}

/**
 * Handles the retry stream. A task that is not due yet goes back with
 * nak(delay) (JetStream redelivers it then); a due one is tried on its
 * remaining URLs, in order, until one succeeds, and the outcome is settled
 * like a first attempt's: delivered, rescheduled, or dead-lettered.
 */
export class Retries {
  constructor(
    private readonly deps: {
      workspace: WorkspaceView;
      sender: WebhookSender;
      gates: DestinationGates;
      settler: Settler;
      windowMs: number;
      logger: Logger;
    },
  ) {}

  async handle(message: JsMsg): Promise<void> {
    // Decided from the headers where possible: the task (and its call) is decoded only when needed.
    const fromHeaders = timingFromHeaders(message);
    let decoded = fromHeaders ? undefined : this.decode(message);
    const timing = fromHeaders ?? (decoded && timingOf(decoded));
    if (!timing) return;
    const task = () => (decoded ??= this.decode(message));

    const now = Date.now();
    const windowEnd = (timing.windowStartMs ?? now) + this.deps.windowMs;
    const notBefore = timing.notBeforeMs ?? now;
    if (notBefore > now + EARLY_TOLERANCE_MS) {
      message.nak(nakDelay(now, notBefore - now, windowEnd));
      return;
    }

    const destination = this.deps.workspace.destination(timing.destinationId);
    if (!destination) {
      await this.deadLetter(message, task(), "destination_removed");
      return;
    }
    const release = destination.enabled ? this.deps.gates.for(destination.id).tryAcquire() : undefined;
    if (!release) {
      // Disabled, or failing and not this task's turn to probe: ask again later, within the window.
      if (now >= windowEnd) {
        await this.deadLetter(message, task(), "window_exhausted");
        return;
      }
      const wait = destination.enabled ? this.deps.gates.for(destination.id).retryLaterMs() : DISABLED_RECHECK_MS;
      message.nak(nakDelay(now, wait + Math.random() * 100, windowEnd));
      return;
    }
    await this.attempt(message, task(), destination, release);
  }

  /** The task in a message; undefined (and the message terminated) when it is not one. */
  private decode(message: JsMsg): DeliveryTask | undefined {
    try {
      return DeliveryTask.decode(message.data);
    } catch (error) {
      this.deps.logger.error({ err: error, seq: message.seq }, "dropping an undecodable retry task");
      message.term();
      return undefined;
    }
  }

  private async deadLetter(
    message: JsMsg,
    task: DeliveryTask | undefined,
    reason: "destination_removed" | "window_exhausted",
  ): Promise<void> {
    if (!task) return;
    await this.deps.settler.deadLetter(task, reason, task.attemptsBefore);
    message.ack();
  }

  /** Tries a due task on its remaining URLs and settles the outcome; the slot is freed either way. */
  private async attempt(message: JsMsg, task: DeliveryTask | undefined, destination: Destination, release: Release): Promise<void> {
    if (!task) {
      // Not a task (already terminated): no request was made, so nothing for the breaker to learn.
      release("permanent");
      return;
    }
    const known = task.urlIndexes.filter((index) => index < destination.settings.webhooks.length);
    const urlIndexes = known.length > 0 ? known : allUrlIndexes(destination);
    let result: FanOutResult | undefined;
    try {
      // A call handed over before its first attempt still gets the first attempt's rule: every URL.
      const mode = task.attemptsBefore === 0 ? "all" : "until_success";
      result = await fanOut(this.deps.sender, destination, task.call!, urlIndexes, mode);
    } finally {
      release(roundOutcome(result));
    }
    await this.deps.settler.settle({ ...task, urlIndexes }, result);
    message.ack();
  }
}
