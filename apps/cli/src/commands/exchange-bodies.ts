import { isUtf8 } from "node:buffer";

/** How `deliveries show` gives a body: JSON embedded as JSON, other UTF-8 as text, anything else base64. */
export type BodyEncoding = "json" | "text" | "base64";

const BODIES = ["requestBody", "responseBody"] as const;

/**
 * An attempt as GetDeliveryAttempt returned it in proto3 JSON (bodies base64), with each body of
 * its exchange made readable: valid UTF-8 becomes its text, and text that is JSON becomes the JSON
 * itself, each with `<body>Encoding` saying which. JSON is embedded only when serialising it again
 * gives the same text, so what is shown is always exactly what was sent (no big number rounded,
 * no spacing or escape lost); other text stays a string. Bytes that are not UTF-8 stay base64.
 */
export function readableAttempt(attempt: unknown): unknown {
  if (!isRecord(attempt) || !isRecord(attempt.exchange)) return attempt;
  const exchange: Record<string, unknown> = { ...attempt.exchange };
  for (const field of BODIES) {
    const base64 = exchange[field];
    if (typeof base64 !== "string") continue;
    const { value, encoding } = readableBody(Buffer.from(base64, "base64"));
    exchange[field] = value;
    exchange[`${field}Encoding`] = encoding;
  }
  return { ...attempt, exchange };
}

export function readableBody(bytes: Buffer): { value: unknown; encoding: BodyEncoding } {
  if (!isUtf8(bytes)) return { value: bytes.toString("base64"), encoding: "base64" };
  const text = bytes.toString("utf8");
  try {
    const json: unknown = JSON.parse(text);
    if (JSON.stringify(json) === text) return { value: json, encoding: "json" };
  } catch {
    // Not JSON: shown as text.
  }
  return { value: text, encoding: "text" };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
