import { describe, expect, it } from "vitest";
import { readableAttempt, readableBody } from "./exchange-bodies.js";

const b64 = (bytes: string | Buffer) => Buffer.from(bytes).toString("base64");

describe("deliveries show: bodies", () => {
  it("embeds a JSON body as JSON when that is exactly the bytes sent", () => {
    expect(readableBody(Buffer.from('{"type":"track","event":"Signed Up","n":[1,2]}'))).toEqual({
      value: { type: "track", event: "Signed Up", n: [1, 2] },
      encoding: "json",
    });
  });

  it("shows JSON that would not come out the same (spacing, big numbers, escapes) as its text", () => {
    for (const text of ['{ "ok": true }\n', '{"id":12345678901234567890}', '{"s":"\\u00e9"}']) {
      expect(readableBody(Buffer.from(text))).toEqual({ value: text, encoding: "text" });
    }
  });

  it("shows other UTF-8 as text, and bytes that are not UTF-8 in base64", () => {
    expect(readableBody(Buffer.from("accepted, thanks ✓"))).toEqual({ value: "accepted, thanks ✓", encoding: "text" });
    expect(readableBody(Buffer.from(""))).toEqual({ value: "", encoding: "text" });
    const binary = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe]);
    expect(readableBody(binary)).toEqual({ value: binary.toString("base64"), encoding: "base64" });
  });

  it("makes both bodies of an attempt's exchange readable and leaves everything else as it was", () => {
    const attempt = {
      attemptId: "d.42.7",
      url: "https://r.example/hook?token=[set:hmac:1a2b3c4d]",
      exchange: {
        method: "POST",
        requestHeaders: [{ name: "content-type", value: "application/json" }],
        requestBody: b64('{"type":"track"}'),
        responseHeaders: [],
        responseBody: b64(Buffer.from([0xc3, 0x28])),
        responseBodyTruncated: false,
      },
    };
    expect(readableAttempt(attempt)).toEqual({
      ...attempt,
      exchange: {
        ...attempt.exchange,
        requestBody: { type: "track" },
        requestBodyEncoding: "json",
        responseBody: b64(Buffer.from([0xc3, 0x28])),
        responseBodyEncoding: "base64",
      },
    });
    // An attempt without an exchange (a dead letter's summary) is shown as it is.
    expect(readableAttempt({ attemptId: "f.1" })).toEqual({ attemptId: "f.1" });
  });
});
