import { mappingKit, mappingKitValidator, type JsonObject, type JsonValue } from "./segment-packages.js";

/*
 * A mapping's data (and its URL and headers, which are mapped the same way): Segment's
 * mapping-kit, `{"@path": "$.properties.total"}`, `{"@template": "Order {{properties.id}}"}`,
 * `{"@if": ...}` and the rest, resolved against a call in Segment's event shape by
 * Segment's own code, so a mapping pasted from Segment makes the same object. A path the
 * call does not have leaves its key out (null is kept).
 */

/** The largest mapping as saved (its JSON), a bound on what one call's resolving costs. */
export const MAX_MAPPING_BYTES = 64 * 1024;

/**
 * The problems of a mapping, each naming its place inside it (`/total/@path should be a string
 * or a mapping directive but it is a number`); empty when it is valid.
 */
export function mappingProblems(mapping: unknown): string[] {
  if (typeof mapping !== "object" || mapping === null || Array.isArray(mapping)) return ["must be a JSON object"];
  const size = Buffer.byteLength(JSON.stringify(mapping));
  if (size > MAX_MAPPING_BYTES) return [`is ${size} bytes of JSON; the limit is ${MAX_MAPPING_BYTES}`];
  try {
    mappingKitValidator()(mapping);
    return [];
  } catch (error) {
    return messagesOf(error).map((message) => message.replace(/\.$/, ""));
  }
}

/** mapping-kit's validator throws one error, or an iterable AggregateError of them. */
function messagesOf(error: unknown): string[] {
  if (error instanceof Error && Symbol.iterator in error) {
    return [...(error as unknown as Iterable<unknown>)].flatMap((inner) => messagesOf(inner));
  }
  return [error instanceof Error ? error.message : String(error)];
}

/** What a mapping made of one event; `error` when resolving it failed (a directive given a value it cannot use). */
export type MappedValue = { ok: true; value: JsonObject } | { ok: false; error: string };

/** A mapping that mappingProblems passed, ready to resolve against events. */
export class Mapping {
  /** mapping-kit fills in some directives' defaults in the object it is given: it gets a copy of its own. */
  private readonly own: JsonObject;

  constructor(readonly json: JsonObject) {
    this.own = structuredClone(json);
  }

  /** The mapping resolved against an event. */
  apply(event: JsonObject): MappedValue {
    try {
      return { ok: true, value: mappingKit().transform(this.own, event) };
    } catch (error) {
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  }
}

export type { JsonObject, JsonValue };
