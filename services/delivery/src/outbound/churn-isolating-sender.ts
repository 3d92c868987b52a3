import type { SendMethod, Sender, SendResult } from "./webhook-sender.js";

/** Answers in a row that closed their connection before a destination's requests move to the sender thread. */
export const MOVE_AFTER_CLOSED = 3;
/** Answers in a row that kept their connection before they come back. */
export const RETURN_AFTER_KEPT = 100;

/** A destination that has closed connections lately: where its requests go, and the current run of answers. */
interface Churn {
  onThread: boolean;
  closedInARow: number;
  keptInARow: number;
}

/**
 * Sends each destination's requests on the main thread, except for destinations whose answers
 * close their connection (a body cut at the size limit, `Connection: close`): theirs go to a
 * sender thread. Every such request costs a new connection (the connect, the socket, its close,
 * the garbage: several times a request on a kept connection), and at hundreds a second that work,
 * done on the event loop, would delay every other destination's answers. On a thread of its own it
 * delays nobody's but theirs. Failures (no answer, resets) are not counted: the circuit breaker
 * deals with those.
 */
export class ChurnIsolatingSender implements Sender {
  private readonly churn = new Map<string, Churn>();

  constructor(
    private readonly local: Sender,
    private readonly thread: Sender,
    /** Told when a destination's requests move to the thread (true) or back (false). */
    private readonly onMove?: (poolKey: string, onThread: boolean) => void,
  ) {}

  send(url: string, headers: string[], body: Buffer, poolKey = "", method: SendMethod = "POST"): Promise<SendResult> {
    const churn = this.churn.get(poolKey);
    const sender = churn?.onThread ? this.thread : this.local;
    return sender.send(url, headers, body, poolKey, method).then((result) => {
      if (result.status > 0 && (result.connectionClosed || churn !== undefined)) this.learn(poolKey, result.connectionClosed === true);
      return result;
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.local.close(), this.thread.close()]);
  }

  /** Destinations whose requests go to the sender thread now. */
  get onThread(): number {
    let count = 0;
    for (const churn of this.churn.values()) if (churn.onThread) count++;
    return count;
  }

  private learn(poolKey: string, closed: boolean): void {
    let churn = this.churn.get(poolKey);
    if (!churn) {
      churn = { onThread: false, closedInARow: 0, keptInARow: 0 };
      this.churn.set(poolKey, churn);
    }
    if (closed) {
      churn.keptInARow = 0;
      if (++churn.closedInARow >= MOVE_AFTER_CLOSED && !churn.onThread) {
        churn.onThread = true;
        this.onMove?.(poolKey, true);
      }
      return;
    }
    churn.closedInARow = 0;
    if (!churn.onThread) {
      // A destination that closed a connection now and then is tracked no longer.
      this.churn.delete(poolKey);
    } else if (++churn.keptInARow >= RETURN_AFTER_KEPT) {
      this.churn.delete(poolKey);
      this.onMove?.(poolKey, false);
    }
  }
}
