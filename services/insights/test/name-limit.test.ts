import { afterAll, beforeAll, expect, it } from "vitest";
import { countedAll, startInsightsFixture, storedCall, track, type InsightsFixture } from "@switchyard/testkit/fixtures/insights";

/** SWITCHYARD_SCHEMA_NAME_LIMIT: past it, a source's new names are counted in one overflow entry per type. */

let fixture: InsightsFixture;

beforeAll(async () => {
  fixture = await startInsightsFixture({ env: { SWITCHYARD_SCHEMA_NAME_LIMIT: "3" } });
});
afterAll(async () => {
  await fixture?.dispose();
});

const summary = (entries: { type: string; name: string; overflow: boolean; countTotal: number }[]) =>
  entries.map(({ type, name, overflow, countTotal }) => `${type}:${name}${overflow ? " (overflow)" : ""}=${countTotal}`).sort();

it("gives the first names their own entries and counts the calls of later names in one overflow entry per type", async () => {
  const at = new Date();
  const page = (name: string) => ({ $case: "page" as const, value: { name, category: "", properties: { url: `/${name}` } } });
  await fixture.publisher.publishCalls("web", "names-1", [
    storedCall("n-1", at, track("A", { a: 1 })),
    storedCall("n-2", at, track("B")),
    storedCall("n-3", at, track("A")),
    storedCall("n-4", at, track("C")),
    storedCall("n-5", at, track("D", { d: "x" })),
    storedCall("n-6", at, track("E", { e: true })),
    storedCall("n-7", at, track("D")),
    storedCall("n-8", at, page("Pricing")),
    storedCall("n-9", at, page("")),
    storedCall("n-10", at, { $case: "identify", value: { traits: { email: "x" } } }),
  ]);
  await countedAll(fixture);
  const first = await fixture.client.getSourceSchema("web");
  expect(first.nameLimit).toBe(3);
  expect(summary(first.entries)).toEqual(
    ["track:A=2", "track:B=1", "track:C=1", "track: (overflow)=3", "page: (overflow)=1", "page:=1", "identify:=1"].sort(),
  );
  const overflow = first.entries.find((entry) => entry.type === "track" && entry.overflow)!;
  expect(overflow.keys).toEqual([
    { key: "d", types: ["string"] },
    { key: "e", types: ["boolean"] },
  ]);

  // Later calls: admitted names keep their entries, new ones go on overflowing, also after a restart.
  await fixture.restart();
  await fixture.publisher.publishCalls("web", "names-2", [storedCall("n-11", at, track("A")), storedCall("n-12", at, track("F"))]);
  // Another source has a limit of its own.
  await fixture.publisher.publishCalls("mobile", "names-3", [storedCall("n-13", at, track("F"))]);
  await countedAll(fixture);
  expect(summary((await fixture.client.getSourceSchema("web")).entries)).toEqual(
    ["track:A=3", "track:B=1", "track:C=1", "track: (overflow)=4", "page: (overflow)=1", "page:=1", "identify:=1"].sort(),
  );
  expect(summary((await fixture.client.getSourceSchema("mobile")).entries)).toEqual(["track:F=1"]);
});
