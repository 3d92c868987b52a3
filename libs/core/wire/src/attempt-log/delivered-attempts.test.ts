import { DeliveryAttempts } from "@switchyard/contracts";
import { describe, expect, it } from "vitest";
import {
  encodedSize,
  encodeDeliveredAttempts,
  exchangeOf,
  indexEntrySize,
  pushLastSummary,
  writeDeliveredAttempt,
  writeIndexEntry,
  type DeliveredEntry,
  type LoggedAttempt,
  type LoggedEntry,
} from "./delivered-attempts.js";

const entryRequest: LoggedEntry & { headers: string[] } = {
  headers: ["X-Token", "s3cr3t", "user-agent", "Switchyard/1.0", "content-type", "application/json"],
  loggedHeaders: ["X-Token", "[set:sha256:0a1b2c3d]", "user-agent", "Switchyard/1.0", "content-type", "application/json"],
  loggedUrl: "https://receiver.example/hook?key=[set:sha256:4e5f6a7b]",
};

function attempt(overrides: Partial<LoggedAttempt> = {}): LoggedAttempt {
  return {
    status: 204,
    latencyMs: 1234,
    responseHeaders: ["Content-Type", "text/plain", "X-Émoji", "✓ done", "Empty", ""].map((s) => Buffer.from(s)),
    responseBody: Buffer.from("ok"),
    responseBodyTruncated: true,
    request: {
      entry: entryRequest,
      headers: [...entryRequest.headers, "x-signature", "sha256=abc"],
      body: Buffer.from('{"type":"track"}'),
    },
    ...overrides,
  };
}

function entry(overrides: Partial<DeliveredEntry> = {}): DeliveredEntry {
  return {
    destinationId: "hook",
    sourceId: "web",
    messageId: "m-1",
    attemptNumber: 2,
    atMs: 1_764_064_800_123,
    attempt: attempt(),
    ...overrides,
  };
}

/** What the generated encoder makes of the same attempts. */
function generated(entries: DeliveredEntry[]): Uint8Array {
  return DeliveryAttempts.encode({
    attempts: entries.map((e) => ({
      destinationId: e.destinationId,
      sourceId: e.sourceId,
      messageId: e.messageId,
      url: e.attempt.request?.entry.loggedUrl ?? "",
      status: e.attempt.status,
      error: "",
      latencyMs: e.attempt.latencyMs,
      attempt: e.attemptNumber,
      at: new Date(e.atMs),
      outcome: "delivered",
      batchMessageIds: [...(e.attempt.batch?.messageIds ?? [])],
      attemptId: "",
      exchange: exchangeOf(e.attempt),
    })),
  }).finish();
}

describe("encodeDeliveredAttempts", () => {
  it("writes the bytes the generated encoder writes, for full, sparse and unusual attempts", () => {
    const entries = [
      entry(),
      entry({ messageId: "", sourceId: "", attemptNumber: 1, atMs: 0 }),
      entry({ attempt: attempt({ responseHeaders: undefined, responseBody: undefined, responseBodyTruncated: false, latencyMs: 0 }) }),
      entry({ attempt: attempt({ request: undefined }) }),
      entry({
        messageId: "m-ünïcode-€",
        attempt: attempt({ request: { entry: entryRequest, headers: entryRequest.headers, body: Buffer.alloc(300, 7) } }),
      }),
      entry({ atMs: 4_102_444_800_999, attempt: attempt({ latencyMs: 300_000, status: 299 }) }),
      entry({
        attempt: attempt({ request: { method: "PUT", entry: entryRequest, headers: entryRequest.headers, body: Buffer.from("[]") } }),
      }),
      // A batch's request: its calls' messageIds, an empty one and long ones included.
      entry({ messageId: "m-1", attempt: attempt({ batch: { messageIds: ["m-1", "", "m-ünïcode-€", "x".repeat(200)] } }) }),
    ];
    expect(Buffer.from(encodeDeliveredAttempts(entries)).toString("hex")).toBe(Buffer.from(generated(entries)).toString("hex"));
    expect(encodeDeliveredAttempts([])).toHaveLength(0);
  });

  it("masks the static header values and keeps the signature", () => {
    const [decoded] = DeliveryAttempts.decode(encodeDeliveredAttempts([entry()])).attempts;
    expect(decoded!.exchange!.requestHeaders.map((h) => [h.name, h.value])).toEqual([
      ["X-Token", "[set:sha256:0a1b2c3d]"],
      ["user-agent", "Switchyard/1.0"],
      ["content-type", "application/json"],
      ["x-signature", "sha256=abc"],
    ]);
    expect(decoded!.at).toEqual(new Date(1_764_064_800_123));
  });

  it("gives each attempt's index entry: its fields without the exchange, with the attempt_id", () => {
    const entries = [
      entry(),
      entry({ messageId: "m-ünïcode-€", attempt: attempt({ request: undefined }) }),
      entry({ atMs: 0, attempt: attempt({ batch: { messageIds: ["a", "b"] } }) }),
    ];
    const buf = Buffer.alloc(entries.reduce((sum, e) => sum + encodedSize(e), 0));
    const marks: number[] = [];
    let pos = 0;
    for (const e of entries) {
      encodedSize(e);
      pos = writeDeliveredAttempt(buf, pos, e);
      pushLastSummary(marks);
    }
    const ids = entries.map((_, i) => `d.42.${i}`);
    const index = Buffer.alloc(ids.reduce((sum, id, i) => sum + indexEntrySize(marks[2 * i + 1]! - marks[2 * i]!, id), 0));
    let at = 0;
    ids.forEach((id, i) => (at = writeIndexEntry(index, at, buf.subarray(marks[2 * i], marks[2 * i + 1]), id)));
    expect(at).toBe(index.length);
    const expected = DeliveryAttempts.decode(generated(entries)).attempts.map((a, i) => ({ ...a, exchange: undefined, attemptId: ids[i] }));
    expect(DeliveryAttempts.decode(index).attempts).toEqual(expected);
  });
});
