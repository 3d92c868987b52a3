import { ManualClock } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { DestinationGate, DestinationGates, type GateOptions, type Release } from "./destination-gate.js";

/**
 * How the gate's parts work together, on a clock the test moves: each part's own rules are tested
 * beside it in gate/.
 */

const OPTIONS: GateOptions = { concurrency: 2, failureThreshold: 3, cooldownMs: 5_000 };

/** Follows a promise so a test can ask whether (and with what) it has resolved. */
function track<T>(promise: Promise<T>): { settled: boolean; value: T | undefined } {
  const state: { settled: boolean; value: T | undefined } = { settled: false, value: undefined };
  void promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

/** Lets every queued promise callback run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

async function acquired(gate: DestinationGate): Promise<Release> {
  const release = await gate.acquire();
  if (!release) throw new Error("expected a slot");
  return release;
}

/** Opens the circuit with `failureThreshold` consecutive retryable failures. */
async function openCircuit(gate: DestinationGate): Promise<void> {
  for (let i = 0; i < OPTIONS.failureThreshold; i++) (await acquired(gate))("retryable");
  expect(gate.failing).toBe(true);
}

describe("DestinationGate: concurrency", () => {
  it("lets `concurrency` deliveries in at once and makes the next one wait for a slot", async () => {
    const gate = new DestinationGate(OPTIONS, new ManualClock());
    const first = await acquired(gate);
    await acquired(gate);
    const third = track(gate.acquire());
    await flush();
    expect(third.settled).toBe(false);
    expect(gate.tryAcquire()).toBeUndefined();

    first("delivered");
    await flush();
    expect(third.settled).toBe(true);
    expect(third.value).toBeTypeOf("function");
  });

  it("lets 4 in until the receiver first answers (a failure is no answer), then `concurrency`, waking the waiters at once", async () => {
    const gate = new DestinationGate({ ...OPTIONS, concurrency: 32 }, new ManualClock());
    const first = await Promise.all(Array.from({ length: 4 }, () => acquired(gate)));
    const waiting = Array.from({ length: 30 }, () => track(gate.acquire()));
    await flush();
    expect(waiting.filter((state) => state.settled)).toHaveLength(0);
    expect(gate.tryAcquire()).toBeUndefined();

    // A failure is no answer: still 4 (one slot freed, one waiter in).
    first[0]!("retryable");
    await flush();
    expect(waiting.filter((state) => state.settled)).toHaveLength(1);
    expect(gate.usualAnswerMs).toBeUndefined();
    // An answer: 32 in flight at once (3 + 1 + 28 more).
    first[1]!("delivered");
    await flush();
    expect(waiting.filter((state) => state.settled)).toHaveLength(30);
    expect(gate.tryAcquire()).toBeUndefined();
  });

  it("serves waiters first come, first served", async () => {
    const gate = new DestinationGate({ ...OPTIONS, concurrency: 1 }, new ManualClock());
    const holder = await acquired(gate);
    const order: string[] = [];
    const waiters = ["a", "b", "c"].map((name) =>
      gate.acquire().then((release) => {
        order.push(name);
        return release;
      }),
    );

    holder("delivered");
    await flush();
    expect(order).toEqual(["a"]);
    (await waiters[0])!("delivered");
    await flush();
    expect(order).toEqual(["a", "b"]);
    (await waiters[1])!("permanent");
    await flush();
    expect(order).toEqual(["a", "b", "c"]);
  });

  it("ignores a second release of the same slot", async () => {
    const gate = new DestinationGate({ ...OPTIONS, concurrency: 1 }, new ManualClock());
    const release = await acquired(gate);
    release("delivered");
    release("delivered");
    await acquired(gate);
    // Had the double release freed two slots, this would get one.
    expect(gate.tryAcquire()).toBeUndefined();
  });

  it("learns the receiver's answer time from its answers only", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(OPTIONS, clock);
    const answered = await acquired(gate);
    const timedOut = await acquired(gate);
    clock.advance(30);
    answered("permanent");
    clock.advance(270);
    timedOut("retryable");
    expect(gate.usualAnswerMs).toBe(30);
    expect(gate.lastActiveAt).toBe(clock.now());
  });
});

describe("DestinationGate: circuit breaker", () => {
  it("opens after N consecutive retryable failures and sends every waiter to the retry path", async () => {
    const gate = new DestinationGate({ ...OPTIONS, concurrency: 1 }, new ManualClock());
    (await acquired(gate))("retryable");
    (await acquired(gate))("retryable");
    const last = await acquired(gate);
    const waiters = [track(gate.acquire()), track(gate.acquire())];
    await flush();
    expect(waiters.map((w) => w.settled)).toEqual([false, false]);

    last("retryable");
    await flush();
    expect(gate.failing).toBe(true);
    expect(waiters).toEqual([
      { settled: true, value: undefined },
      { settled: true, value: undefined },
    ]);
    // New first attempts skip the destination at once.
    expect(await gate.acquire()).toBeUndefined();
  });

  it("is not opened by permanent failures (4xx, redirects, certificate errors)", async () => {
    const gate = new DestinationGate(OPTIONS, new ManualClock());
    for (let i = 0; i < 10; i++) (await acquired(gate))("permanent");
    expect(gate.failing).toBe(false);
    expect(await gate.acquire()).toBeTypeOf("function");
  });

  it("gives retries a single probe once the cool-down is over, and asks the others to wait a cool-down meanwhile", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(OPTIONS, clock);
    await openCircuit(gate);

    expect(gate.tryAcquire()).toBeUndefined();
    expect(gate.retryLaterMs()).toBe(5_000);
    clock.advance(4_999);
    expect(gate.tryAcquire()).toBeUndefined();
    expect(gate.retryLaterMs()).toBe(100);

    clock.advance(1);
    const probe = gate.tryAcquire();
    expect(probe).toBeTypeOf("function");
    // One probe at a time, and first attempts still skip the destination.
    expect(gate.tryAcquire()).toBeUndefined();
    expect(gate.retryLaterMs()).toBe(OPTIONS.cooldownMs);
    expect(await gate.acquire()).toBeUndefined();

    probe!("delivered");
    expect(gate.failing).toBe(false);
    expect(await gate.acquire()).toBeTypeOf("function");
    expect(gate.tryAcquire()).toBeTypeOf("function");
  });

  it("re-opens for another cool-down when the probe fails", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(OPTIONS, clock);
    await openCircuit(gate);
    clock.advance(5_000);
    gate.tryAcquire()!("retryable");

    expect(gate.failing).toBe(true);
    expect(gate.tryAcquire()).toBeUndefined();
    expect(gate.retryLaterMs()).toBe(5_000);
    clock.advance(5_000);
    expect(gate.tryAcquire()).toBeTypeOf("function");
  });

  it("asks healthy retries that found no slot to come back soon", async () => {
    const gate = new DestinationGate({ ...OPTIONS, concurrency: 1 }, new ManualClock());
    await acquired(gate);
    expect(gate.tryAcquire()).toBeUndefined();
    expect(gate.retryLaterMs()).toBe(100);
  });
});

describe("DestinationGate: a stalled destination", () => {
  const STALLING: GateOptions = { ...OPTIONS, stallMs: 50 };

  it("sends waiting first attempts to the retry path once no slot was freed for stallMs, without opening the breaker", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(STALLING, clock);
    await acquired(gate);
    await acquired(gate);
    const waiter = track(gate.acquire());
    clock.advance(49);
    await flush();
    expect(gate.stalled).toBe(false);
    expect(waiter.settled).toBe(false);

    clock.advance(1);
    await flush();
    expect(gate.stalled).toBe(true);
    expect(waiter).toEqual({ settled: true, value: undefined });
    // New first attempts skip it at once; it is not failing, and retries come back after a cool-down.
    expect(await gate.acquire()).toBeUndefined();
    expect(gate.failing).toBe(false);
    expect(gate.retryLaterMs()).toBe(5_000);
  });

  it("is not stalled while slots are being freed", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(STALLING, clock);
    const first = await acquired(gate);
    await acquired(gate);
    const waiter = track(gate.acquire());
    clock.advance(40);
    first("delivered"); // progress: the waiter gets this slot
    clock.advance(40);
    await flush();
    expect(gate.stalled).toBe(false);
    expect(waiter.value).toBeTypeOf("function");
    expect(gate.retryLaterMs()).toBe(100);
  });

  it("calls a stall after several times the answer time it learnt, between minStallMs and stallMs", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate({ ...OPTIONS, minStallMs: 10, stallMs: 1_000 }, clock);
    for (let i = 0; i < 20; i++) {
      const release = await acquired(gate);
      clock.advance(20);
      release("delivered");
    }
    await acquired(gate);
    await acquired(gate);
    const waiter = track(gate.acquire());
    // A receiver that answers in 20 ms is stalled after 4 × 20 ms without an answer.
    clock.advance(79);
    await flush();
    expect(waiter.settled).toBe(false);
    clock.advance(1);
    await flush();
    expect(waiter).toEqual({ settled: true, value: undefined });
    expect(gate.stalled).toBe(true);
  });

  it("is not stalled by any wait when stallMs is not set", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(OPTIONS, clock);
    await acquired(gate);
    await acquired(gate);
    const waiter = track(gate.acquire());
    clock.advance(60_000);
    await flush();
    expect(gate.stalled).toBe(false);
    expect(waiter.settled).toBe(false);
  });
});

describe("DestinationGate: not moving (a batch may give up its slot)", () => {
  it("is not moving once every slot has been taken and none freed for several answer times, and any freed slot counts as moving", async () => {
    const clock = new ManualClock();
    const gate = new DestinationGate(OPTIONS, clock);
    const first = await acquired(gate);
    clock.advance(100);
    first("delivered"); // answers take 100 ms
    await acquired(gate);
    const second = await acquired(gate);
    clock.advance(399);
    expect(gate.notMoving(25)).toBe(false);
    clock.advance(1);
    expect(gate.notMoving(25)).toBe(true);
    second("delivered");
    await acquired(gate);
    expect(gate.notMoving(25)).toBe(false);
  });
});

describe("DestinationGate: behind (a slow receiver, slower than its calls come)", () => {
  /** A gate whose receiver has answered once, in `answerMs`, with every slot taken again. */
  async function busyGate(answerMs: number) {
    const clock = new ManualClock();
    const gate = new DestinationGate({ ...OPTIONS, stallMs: 1_000 }, clock);
    const first = await acquired(gate);
    clock.advance(answerMs);
    first("delivered");
    const slots = [await acquired(gate), await acquired(gate)];
    return { gate, clock, slots };
  }

  it("sends a first attempt that would wait longer than a stall to the retry path, and retries a cool-down later", async () => {
    // 500 ms an answer over 2 slots: the 4th waiting call would wait 1,000 ms, the 5th longer.
    const { gate, slots } = await busyGate(500);
    expect(gate.behind()).toBe(false); // nothing waits
    const waiting = [1, 2, 3, 4].map(() => track(gate.acquire()));
    expect(gate.behind()).toBe(true);
    const refused = track(gate.acquire());
    await flush();
    expect(refused).toEqual({ settled: true, value: undefined });
    expect(waiting.every((call) => !call.settled)).toBe(true);
    expect(gate.failing).toBe(false); // refused for its backlog, not counted as a failure
    expect(gate.retryLaterMs()).toBe(OPTIONS.cooldownMs);

    // As slots free up, the waiting calls get them in turn and new ones may wait again.
    slots[0]!("delivered");
    await flush();
    expect(waiting[0]!.settled).toBe(true);
    expect(track(gate.acquire()).settled).toBe(false);
  });

  it("lets any number of calls wait for a fast receiver, as a busy moment's batches do", async () => {
    // 200 ms an answer: 500 calls waiting over 2 slots are 50 s of work, and still wait.
    const { gate } = await busyGate(200);
    const waiting = Array.from({ length: 500 }, () => track(gate.acquire()));
    await flush();
    expect(waiting.some((call) => call.settled)).toBe(false);
    expect(gate.behind()).toBe(false);
    expect(gate.retryLaterMs()).toBe(100);
  });
});

/**
 * Gates of one process whose receivers have each answered once, in `answerMs`, every slot taken
 * again and `waiting` calls waiting; then `advanceMs` later (10 by default: every one still busy,
 * a slot taken within 100 ms).
 */
async function queuedGates(destinations: Record<string, { answerMs: number; waiting: number }>, advanceMs = 10) {
  const clock = new ManualClock();
  const gates = new DestinationGates({ ...OPTIONS, stallMs: 1_000 }, undefined, clock);
  for (const [id, { answerMs, waiting }] of Object.entries(destinations)) {
    const gate = gates.for(id);
    const first = await acquired(gate);
    clock.advance(answerMs);
    first("delivered");
    await acquired(gate);
    await acquired(gate);
    for (let i = 0; i < waiting; i++) void gate.acquire();
  }
  clock.advance(advanceMs);
  return { gates, clock };
}

describe("DestinationGates: behind, slower than the other destinations", () => {
  /**
   * Gates of one process whose receivers have each answered once, in the given time, every slot
   * taken again and one call waiting; then past the typical answer time's refresh, short of a stall.
   */
  async function busyGates(answerMs: Record<string, number>) {
    const destinations = Object.fromEntries(Object.entries(answerMs).map(([id, ms]) => [id, { answerMs: ms, waiting: 1 }]));
    return (await queuedGates(destinations, 200)).gates;
  }

  it("is behind at 100 ms or more an answer when that is five times what the others usually take", async () => {
    const gates = await busyGates({ healthy: 2, other: 3, slow: 120 });
    expect(gates.for("slow").behind()).toBe(true);
    expect(gates.for("healthy").behind()).toBe(false);
    expect(gates.for("other").behind()).toBe(false);
    // Of two destinations, the slow one is compared with the other one.
    expect((await busyGates({ healthy: 2, slow: 120 })).for("slow").behind()).toBe(true);
  });

  it("is not behind when every destination answers late (this process is overloaded)", async () => {
    const late = await busyGates({ a: 120, b: 130, c: 110 });
    expect(["a", "b", "c"].some((id) => late.for(id).behind())).toBe(false);
  });

  it("sends a first attempt that would wait longer than a stall at such a receiver to the retry path", async () => {
    // 125 ms an answer over 2 slots: the 16th waiting call would wait 1,000 ms, the 17th longer.
    const gates = await busyGates({ healthy: 2, slow: 125 });
    const slow = gates.for("slow");
    const waiting = Array.from({ length: 15 }, () => track(slow.acquire()));
    const refused = track(slow.acquire());
    await flush();
    expect(refused).toEqual({ settled: true, value: undefined });
    expect(waiting.some((call) => call.settled)).toBe(false);
    expect(slow.failing).toBe(false);
  });
});

describe("DestinationGates: behind, a longer queue than the other destinations", () => {
  it("is behind when its calls wait five times as long as the others', and its retries come back after a cool-down", async () => {
    // 20 ms an answer, 2 slots, 10 calls waiting: a call queued now is answered in 120 ms.
    const { gates } = await queuedGates({ healthy: { answerMs: 2, waiting: 1 }, churning: { answerMs: 20, waiting: 10 } });
    expect(gates.for("churning").behind()).toBe(true);
    expect(gates.for("healthy").behind()).toBe(false);
    // Every slot that frees goes to a first attempt.
    expect(gates.for("churning").retryLaterMs()).toBe(OPTIONS.cooldownMs);
    expect(gates.for("healthy").retryLaterMs()).toBe(100);
  });

  it("is not behind when every destination's queue is long (this process is the bottleneck), nor alone", async () => {
    const { gates: busy } = await queuedGates({
      a: { answerMs: 20, waiting: 40 },
      b: { answerMs: 30, waiting: 30 },
      c: { answerMs: 10, waiting: 100 },
    });
    expect(["a", "b", "c"].some((id) => busy.for(id).behind())).toBe(false);
    expect((await queuedGates({ alone: { answerMs: 20, waiting: 500 } })).gates.for("alone").behind()).toBe(false);
  });

  it("is not compared with idle destinations: a burst to one destination while the others are quiet keeps its pace", async () => {
    const clock = new ManualClock();
    const gates = new DestinationGates({ ...OPTIONS, stallMs: 1_000 }, undefined, clock);
    const quiet = gates.for("quiet");
    const answered = await acquired(quiet);
    clock.advance(2);
    answered("delivered");
    clock.advance(100); // no slot taken or freed since: idle
    const bursting = gates.for("bursting");
    const first = await acquired(bursting);
    clock.advance(5);
    first("delivered");
    await acquired(bursting);
    await acquired(bursting);
    for (let i = 0; i < 100; i++) void bursting.acquire(); // answered in 255 ms, against the quiet one's 2
    expect(bursting.behind()).toBe(false);
    // The quiet one gets a call again: the burst's queue is now long next to a busy destination's.
    await acquired(quiet);
    clock.advance(100); // past the typical's refresh
    await acquired(quiet);
    expect(bursting.behind()).toBe(true);
  });

  it("sends a first attempt whose turn for a slot would come after a stall to the retry path", async () => {
    // 20 ms an answer over 2 slots: the 100th waiting call waits 1,000 ms for its slot, the 101st longer.
    const { gates } = await queuedGates({ healthy: { answerMs: 2, waiting: 1 }, churning: { answerMs: 20, waiting: 99 } });
    const churning = gates.for("churning");
    const last = track(churning.acquire());
    const refused = track(churning.acquire());
    await flush();
    expect(last.settled).toBe(false);
    expect(refused).toEqual({ settled: true, value: undefined });
    expect(churning.failing).toBe(false);
    expect(churning.retryLaterMs()).toBe(OPTIONS.cooldownMs);
  });
});

describe("DestinationGates", () => {
  it("keeps one gate per destination", async () => {
    const gates = new DestinationGates({ ...OPTIONS, concurrency: 1 });
    expect(gates.for("a")).toBe(gates.for("a"));
    expect(gates.for("a")).not.toBe(gates.for("b"));
    await acquired(gates.for("a"));
    // A busy destination does not hold up another one.
    expect(gates.for("b").tryAcquire()).toBeTypeOf("function");
  });

  it("says which destination turned failing or healthy again, once per change", async () => {
    const changes: [string, boolean][] = [];
    const clock = new ManualClock();
    const gates = new DestinationGates(OPTIONS, (id, failing) => changes.push([id, failing]), clock);
    await openCircuit(gates.for("down"));
    await acquired(gates.for("up"));
    expect(changes).toEqual([["down", true]]);
    clock.advance(OPTIONS.cooldownMs);
    gates.for("down").tryAcquire()!("delivered");
    expect(changes).toEqual([
      ["down", true],
      ["down", false],
    ]);
  });
});
