import { describe, expect, it } from "vitest";
import { WEBHOOKS_INTEGRATION, webhooksEnabled } from "./index.js";

describe("webhooksEnabled (docs/contract.md §8.1)", () => {
  it('names the destination "Webhooks"', () => {
    expect(WEBHOOKS_INTEGRATION).toBe("Webhooks");
  });

  it("is on by default: no integrations, an empty object, or only other destinations", () => {
    expect(webhooksEnabled(undefined)).toBe(true);
    expect(webhooksEnabled({})).toBe(true);
    expect(webhooksEnabled({ Mixpanel: false, Amplitude: true })).toBe(true);
    expect(webhooksEnabled({ All: true })).toBe(true);
  });

  it('"Webhooks": false turns it off, even with "All": true', () => {
    expect(webhooksEnabled({ Webhooks: false })).toBe(false);
    expect(webhooksEnabled({ All: true, Webhooks: false })).toBe(false);
  });

  it('"All": false turns it off unless "Webhooks" is set to true', () => {
    expect(webhooksEnabled({ All: false })).toBe(false);
    expect(webhooksEnabled({ All: false, Mixpanel: true })).toBe(false);
    expect(webhooksEnabled({ All: false, Webhooks: true })).toBe(true);
  });

  it("counts an object value as on", () => {
    expect(webhooksEnabled({ Webhooks: {} })).toBe(true);
    expect(webhooksEnabled({ All: false, Webhooks: { someOption: 1 } })).toBe(true);
  });

  it("matches names case-sensitively: other spellings are other destinations", () => {
    expect(webhooksEnabled({ webhooks: false })).toBe(true);
    expect(webhooksEnabled({ WEBHOOKS: false })).toBe(true);
    expect(webhooksEnabled({ all: false })).toBe(true);
    expect(webhooksEnabled({ All: false, webhooks: true })).toBe(false);
  });
});
