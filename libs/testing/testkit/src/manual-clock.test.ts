import { describe, expect, it } from "vitest";
import { ManualClock } from "./manual-clock.js";

describe("ManualClock", () => {
  it("runs each timer once time reaches it, on time and in order, with those that timers set on the way", () => {
    const clock = new ManualClock(0);
    const ran: string[] = [];
    clock.after(30, (late) => ran.push(`b@${clock.now()}+${late}`));
    clock.after(10, (late) => {
      ran.push(`a@${clock.now()}+${late}`);
      clock.after(5, (later) => ran.push(`a2@${clock.now()}+${later}`));
    });
    clock.after(30, (late) => ran.push(`c@${clock.now()}+${late}`));

    clock.advance(9);
    expect(ran).toEqual([]);
    clock.advance(21);
    expect(ran).toEqual(["a@10+0", "a2@15+0", "b@30+0", "c@30+0"]);
    expect(clock.now()).toBe(30);
    expect(clock.pending).toBe(0);
  });

  it("runs the timers that came due during a jump late, at the time jumped to", () => {
    const clock = new ManualClock(100);
    const ran: string[] = [];
    clock.after(50, (late) => ran.push(`a@${clock.now()}+${late}`));
    clock.after(500, (late) => ran.push(`b@${clock.now()}+${late}`));

    clock.jump(300);
    expect(ran).toEqual(["a@400+250"]);
    expect(clock.pending).toBe(1);
  });

  it("refuses to move time back", () => {
    const clock = new ManualClock();
    expect(() => clock.advance(-1)).toThrow("advance: ms must be a number of 0 or more, got -1");
    expect(() => clock.jump(Number.NaN)).toThrow("jump: ms must be a number of 0 or more, got NaN");
  });
});
