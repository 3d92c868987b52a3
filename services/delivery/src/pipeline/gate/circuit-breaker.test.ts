import { ManualClock } from "@switchyard/testkit";
import { describe, expect, it } from "vitest";
import { CircuitBreaker } from "./circuit-breaker.js";

/** A breaker opening after 3 retryable failures in a row for 5 s, noting each change. */
function breaker() {
  const clock = new ManualClock();
  const changes: boolean[] = [];
  const circuit = new CircuitBreaker(
    { failureThreshold: 3, cooldownMs: 5_000, onFailingChange: (failing) => changes.push(failing) },
    clock.now,
  );
  return { circuit, clock, changes };
}

describe("CircuitBreaker", () => {
  it("opens after `failureThreshold` retryable failures in a row, saying so once", () => {
    const { circuit, changes } = breaker();
    expect(circuit.record("retryable", false)).toBe(false);
    expect(circuit.record("retryable", false)).toBe(false);
    expect(circuit.failing).toBe(false);
    expect(circuit.record("retryable", false)).toBe(true);
    expect(circuit.failing).toBe(true);
    expect(circuit.coolDownLeftMs).toBe(5_000);
    // Another failure (an attempt that was in flight) opens it for a new cool-down, and is no new change.
    expect(circuit.record("retryable", false)).toBe(true);
    expect(changes).toEqual([true]);
  });

  it("counts only failures in a row: a delivery in between starts the count again", () => {
    const { circuit } = breaker();
    for (const outcome of ["retryable", "retryable", "delivered", "retryable", "retryable"] as const) circuit.record(outcome, false);
    expect(circuit.failing).toBe(false);
  });

  it("is not opened by permanent failures (4xx, redirects, certificate errors) nor by attempts that made no request", () => {
    const { circuit } = breaker();
    for (let i = 0; i < 10; i++) circuit.record("permanent", false);
    for (let i = 0; i < 10; i++) circuit.record("unused", false);
    expect(circuit.failing).toBe(false);
  });

  it("lets a single probe go once the cool-down is over; its delivery closes the breaker", () => {
    const { circuit, clock, changes } = breaker();
    for (let i = 0; i < 3; i++) circuit.record("retryable", false);
    expect(circuit.tryProbe()).toBe(false);
    clock.advance(4_999);
    expect(circuit.coolDownLeftMs).toBe(1);
    expect(circuit.tryProbe()).toBe(false);

    clock.advance(1);
    expect(circuit.tryProbe()).toBe(true);
    expect(circuit.probing).toBe(true);
    expect(circuit.tryProbe()).toBe(false); // one at a time
    circuit.record("delivered", true);
    expect(circuit.failing).toBe(false);
    expect(circuit.probing).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it("opens for another cool-down when the probe fails", () => {
    const { circuit, clock, changes } = breaker();
    for (let i = 0; i < 3; i++) circuit.record("retryable", false);
    clock.advance(5_000);
    expect(circuit.tryProbe()).toBe(true);
    expect(circuit.record("retryable", true)).toBe(true);

    expect(circuit.failing).toBe(true);
    expect(circuit.probing).toBe(false);
    expect(circuit.tryProbe()).toBe(false);
    expect(circuit.coolDownLeftMs).toBe(5_000);
    clock.advance(5_000);
    expect(circuit.tryProbe()).toBe(true);
    expect(changes).toEqual([true]);
  });

  it("lets the next probe go at once when one made no request, and stays failing", () => {
    const { circuit, clock } = breaker();
    for (let i = 0; i < 3; i++) circuit.record("retryable", false);
    clock.advance(5_000);
    expect(circuit.tryProbe()).toBe(true);
    circuit.record("unused", true);
    expect(circuit.failing).toBe(true);
    expect(circuit.tryProbe()).toBe(true);
  });
});
