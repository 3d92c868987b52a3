import fc from "fast-check";
import { AggregatorRegistry, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LocalHistogram } from "../src/index.js";

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The same observations into a LocalHistogram and a prom-client Histogram, each in a registry of its own. */
function pair(values: number[], buckets = BUCKETS) {
  const local = new Registry();
  const reference = new Registry();
  const options = { name: "switchyard_test_seconds", help: "Test durations", buckets };
  const ours = new LocalHistogram({ ...options, registers: [local] });
  const theirs = new Histogram({ ...options, registers: [reference] });
  for (const value of values) {
    ours.observe(value);
    theirs.observe(value);
  }
  return { local, reference, ours, theirs };
}

const observations = fc.array(
  fc.oneof(
    fc.double({ min: 0, max: 100, noNaN: true }),
    fc.constantFrom(...BUCKETS),
    fc.integer({ min: 0, max: 5000 }).map((ms) => ms / 1000),
  ),
  { maxLength: 200 },
);

/**
 * LocalHistogram stands in for prom-client's Histogram on hot paths (delivery's request and
 * accept-to-delivery times): a registry must show both the same, as text and as the JSON worker
 * processes send to be added up.
 */
describe("LocalHistogram", () => {
  it("shows what prom-client's Histogram shows after the same observations", async () => {
    await fc.assert(
      fc.asyncProperty(observations, async (values) => {
        const { local, reference } = pair(values);
        expect(await local.metrics()).toBe(await reference.metrics());
        expect(await local.getMetricsAsJSON()).toEqual(await reference.getMetricsAsJSON());
      }),
    );
  });

  it("adds up across workers as prom-client's Histogram does", async () => {
    const a = pair([0.001, 0.2, 7, 40]);
    const b = pair([0.005, 0.3, 2]);
    const ours = AggregatorRegistry.aggregate([await a.local.getMetricsAsJSON(), await b.local.getMetricsAsJSON()]);
    const theirs = AggregatorRegistry.aggregate([await a.reference.getMetricsAsJSON(), await b.reference.getMetricsAsJSON()]);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it("resets as prom-client's Histogram does", async () => {
    const { local, reference, ours, theirs } = pair([0.02, 3]);
    local.resetMetrics();
    reference.resetMetrics();
    expect(await local.metrics()).toBe(await reference.metrics());
    ours.observe(0.5);
    theirs.observe(0.5);
    expect(await local.metrics()).toBe(await reference.metrics());
  });

  it("refuses what prom-client refuses", () => {
    const { ours, theirs } = pair([]);
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => ours.observe(value)).toThrow(TypeError);
      expect(() => theirs.observe(value)).toThrow(TypeError);
    }
    expect(() => new LocalHistogram({ name: "x", help: "x", buckets: [1, 0.5], registers: [] })).toThrow(/ascending/);
  });
});
