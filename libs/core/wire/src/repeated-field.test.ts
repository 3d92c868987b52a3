import { SyncAudienceSnapshotRequest, SyncAudienceSnapshotRequestField } from "@switchyard/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repeatedFieldRanges } from "./repeated-field.js";

describe("repeatedFieldRanges", () => {
  it("finds each value of a message of one repeated string field where the generated decoder reads it", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 300 }), { maxLength: 20 }), (userIds) => {
        const bytes = Buffer.from(SyncAudienceSnapshotRequest.encode({ header: undefined, userIds }).finish());
        const ranges = repeatedFieldRanges(bytes, SyncAudienceSnapshotRequestField.USER_IDS)!;
        expect(ranges.starts.map((start, i) => bytes.toString("utf8", start, start + ranges.lengths[i]!))).toEqual(userIds);
      }),
    );
  });

  it("refuses other bytes: another field, a length past the end, a cut length", () => {
    const header = SyncAudienceSnapshotRequest.encode(
      SyncAudienceSnapshotRequest.fromPartial({ header: { sourceId: "web" }, userIds: ["u"] }),
    ).finish();
    expect(repeatedFieldRanges(header, SyncAudienceSnapshotRequestField.USER_IDS)).toBeUndefined();
    expect(repeatedFieldRanges(Buffer.from([0x12, 0x05, 0x61]), SyncAudienceSnapshotRequestField.USER_IDS)).toBeUndefined();
    expect(repeatedFieldRanges(Buffer.from([0x12, 0x85]), SyncAudienceSnapshotRequestField.USER_IDS)).toBeUndefined();
    expect(repeatedFieldRanges(Buffer.alloc(0), SyncAudienceSnapshotRequestField.USER_IDS)).toEqual({ starts: [], lengths: [] });
  });
});
