import { WebhookReceiver, type ResponsePlan } from "@switchyard/testkit";

/**
 * A webhook receiver that counts requests per messageId, so a scenario can
 * say which accepted calls arrived, which never did, and which came twice.
 * It keeps counts, not requests, so a 50,000-call run stays small.
 */
export class Tally {
  /** 2xx answers per key: what the sender counts as delivered. */
  readonly counts = new Map<string, number>();
  /** Every request per key, whatever the answer. */
  readonly attempts = new Map<string, number>();
  /** What the receiver answers; the default is 200. Counting happens only for 2xx answers. */
  plan: (messageId: string) => ResponsePlan = () => ({ status: 200 });

  private constructor(
    readonly receiver: WebhookReceiver,
    keyOf: (body: any) => string,
  ) {
    receiver.respond((request) => {
      const messageId = keyOf(request.json);
      const plan = this.plan(messageId);
      this.attempts.set(messageId, (this.attempts.get(messageId) ?? 0) + 1);
      if (!("destroy" in plan) && plan.status >= 200 && plan.status < 300)
        this.counts.set(messageId, (this.counts.get(messageId) ?? 0) + 1);
      return plan;
    });
  }

  /** `keyOf` names what is counted (default: the body's messageId). */
  static async start(options: { port?: number; keyOf?: (body: any) => string } = {}): Promise<Tally> {
    const receiver = await WebhookReceiver.start({ record: false, ...(options.port === undefined ? {} : { port: options.port }) });
    return new Tally(receiver, options.keyOf ?? ((body) => String(body?.messageId)));
  }

  url(path = "/hook"): string {
    return this.receiver.url(path);
  }

  /** Distinct calls received. */
  get distinct(): number {
    return this.counts.size;
  }

  has(messageId: string): boolean {
    return this.counts.has(messageId);
  }

  /** The accepted calls that never arrived. */
  missing(accepted: Iterable<string>): string[] {
    return [...accepted].filter((id) => !this.counts.has(id));
  }

  /** Calls that arrived more than once, and how many requests beyond the first they cost. */
  duplicates(): { calls: number; extraRequests: number } {
    let calls = 0;
    let extraRequests = 0;
    for (const count of this.counts.values()) {
      if (count > 1) {
        calls++;
        extraRequests += count - 1;
      }
    }
    return { calls, extraRequests };
  }

  async close(): Promise<void> {
    await this.receiver.close();
  }
}
