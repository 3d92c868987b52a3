import { describe, expect, it } from "vitest";
import { AnswerTime } from "./answer-time.js";

describe("AnswerTime", () => {
  it("knows nothing before the first answer, takes that one as it is, then moves a tenth of the way to each new one", () => {
    const answers = new AnswerTime();
    expect(answers.usualMs).toBeUndefined();
    answers.learn(100);
    expect(answers.usualMs).toBe(100);
    answers.learn(200);
    expect(answers.usualMs).toBe(110);
    answers.learn(0);
    expect(answers.usualMs).toBeCloseTo(99);
  });
});
