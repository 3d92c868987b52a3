import { describe, expect, it } from "vitest";
import { Analytics } from "./analytics.js";
import { OptionsError } from "./errors.js";
import { nearestName, resolveOptions, type AnalyticsOptions } from "./options.js";

/** The OptionsError `options` throws (fails the test when none is thrown). */
function refusal(options: unknown): OptionsError {
  try {
    resolveOptions(options as AnalyticsOptions, {});
  } catch (error) {
    if (error instanceof OptionsError) return error;
    throw error;
  }
  throw new Error("no OptionsError");
}

describe("client options", () => {
  it("refuses a mistyped option, naming it and the nearest valid name", () => {
    const error = refusal({ flushat: 1 });
    expect(error.option).toBe("flushat");
    expect(error.message).toBe("flushat: unknown option; did you mean flushAt?");
    expect(refusal({ flushAfterMs: 100 }).message).toContain("did you mean flushAfter?");
    expect(refusal({ maxQueSize: 5 }).message).toContain("did you mean maxQueueSize?");
    expect(refusal({ endpont: "127.0.0.1:1" }).message).toContain("did you mean endpoint?");
  });

  it("lists the valid options when nothing is close", () => {
    const error = refusal({ compression: "gzip" });
    expect(error.option).toBe("compression");
    expect(error.message).toContain("unknown option; valid options: endpoint, tls, flushAt");
  });

  it("checks the keys of retry and tls too", () => {
    expect(refusal({ retry: { maxDelay: 10 } }).message).toBe("retry.maxDelay: unknown option; did you mean retry.maxDelayMs?");
    expect(refusal({ tls: { rootCert: "pem" } }).message).toBe("tls.rootCert: unknown option; did you mean tls.rootCerts?");
    expect(refusal({ retry: 5 }).message).toBe("retry: must be an object");
    expect(refusal([]).message).toBe("options: must be an object");
  });

  it("accepts every documented option", () => {
    expect(() =>
      resolveOptions(
        {
          endpoint: "127.0.0.1:50051",
          tls: false,
          flushAt: 1,
          flushAfter: 10,
          maxQueueSize: 10,
          maxQueueBytes: 64 * 1024,
          maxInFlight: 1,
          timeout: 10,
          retry: { initialDelayMs: 1, maxDelayMs: 2, maxElapsedMs: 3 },
          closeTimeout: 0,
          logger: { debug: () => {}, warn: () => {}, error: () => {} },
          debug: false,
        },
        {},
      ),
    ).not.toThrow();
  });

  it("is checked by the constructor", () => {
    expect(() => new Analytics("wk_options_test_0001", { flushat: 1 } as AnalyticsOptions)).toThrow(OptionsError);
    expect(() => new Analytics("wk_options_test_0001", { flushat: 1 } as AnalyticsOptions)).toThrow("did you mean flushAt?");
  });

  it("suggests only names close enough to be a typo", () => {
    expect(nearestName("FLUSHAT", ["flushAt", "flushAfter"])).toBe("flushAt");
    expect(nearestName("banana", ["flushAt", "flushAfter"])).toBeUndefined();
  });
});
