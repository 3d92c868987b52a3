import { describe, expect, it } from "vitest";
import { csrfTokenMatches, SessionStore } from "./sessions.js";
import { SignInLimiter } from "./sign-in.js";

describe("SessionStore", () => {
  it("finds a session by its cookie value until it expires or is deleted", () => {
    let now = 1_000;
    const store = new SessionStore(60_000, () => now);
    const { id, session } = store.create();
    expect(store.get(id)).toBe(session);
    expect(store.get(`${id}x`)).toBeUndefined();
    expect(store.get(undefined)).toBeUndefined();
    expect(csrfTokenMatches(session, session.csrfToken)).toBe(true);
    expect(csrfTokenMatches(session, `${session.csrfToken}x`)).toBe(false);
    expect(csrfTokenMatches(session, undefined)).toBe(false);
    now += 60_000;
    expect(store.get(id)).toBeUndefined();
    const second = store.create();
    store.delete(second.id);
    expect(store.get(second.id)).toBeUndefined();
    store.close();
  });
});

describe("SignInLimiter", () => {
  it("holds an address back after too many failures within the window, and lets it go after", () => {
    let now = 0;
    const limiter = new SignInLimiter(3, 60_000, () => now);
    for (let i = 0; i < 3; i++) {
      expect(limiter.retryAfterMs("a")).toBe(0);
      limiter.failed("a");
      now += 1_000;
    }
    expect(limiter.retryAfterMs("a")).toBe(57_000);
    expect(limiter.retryAfterMs("b")).toBe(0);
    now = 60_001;
    expect(limiter.retryAfterMs("a")).toBe(0);
    limiter.failed("a");
    limiter.succeeded("a");
    expect(limiter.retryAfterMs("a")).toBe(0);
  });
});
