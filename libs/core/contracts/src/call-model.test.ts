import { describe, expect, it } from "vitest";
import { Call, CALL_FIELDS, CallField, PAYLOAD_MESSAGE_FIELDS, Track } from "./index.js";

describe("the generated Call model", () => {
  it("names every field of Call that the generated message has, in number order", () => {
    const keys = Object.keys(Call.fromPartial({})).filter((key) => key !== "payload");
    const plain = CALL_FIELDS.filter((field) => field.kind !== "payload").map((field) => field.json);
    expect(plain).toEqual(keys);
    const numbers = CALL_FIELDS.map((field) => field.number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  });

  it("agrees with the generated field numbers and tags", () => {
    const messageId = CALL_FIELDS.find((field) => field.json === "messageId");
    expect(messageId?.number).toBe(CallField.MESSAGE_ID);
    for (const field of CALL_FIELDS) expect(field.tag).toBe((field.number << 3) | field.wireType);
  });

  it("lists each payload message's fields as the generated message has them", () => {
    expect(PAYLOAD_MESSAGE_FIELDS.track.map((field) => field.json)).toEqual(Object.keys(Track.fromPartial({})));
  });
});
