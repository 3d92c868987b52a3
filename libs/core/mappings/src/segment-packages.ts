import { createRequire } from "node:module";

/*
 * Segment's own packages for its trigger and mapping languages, loaded in one place. They publish
 * CommonJS that Node's ESM loader cannot import by name (extensionless specifiers, re-exports by
 * getter), so they are required. Only mapping-kit's own entries are loaded: the package's index
 * would load its HTTP client and schema validator too. Each is loaded on first use: a process that
 * only reads workspace records (ingest, the CLI) never pays for loading them.
 */

const require = createRequire(import.meta.url);

/** A JSON value as mapping-kit takes and returns it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue | undefined };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue | undefined };

interface MappingKit {
  transform(mapping: JsonObject, data?: JsonObject): JsonObject;
  transformBatch(mapping: JsonObject, data?: JsonObject[]): JsonObject[];
}

/** A module loaded by its first caller. */
function onFirstUse<T>(load: () => T): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= load());
}

/** @segment/actions-core's mapping-kit: `transform` resolves the directives of a mapping against an event. */
export const mappingKit = onFirstUse(() => require("@segment/actions-core/mapping-kit") as MappingKit);

/** mapping-kit's validator: throws a ValidationError, or an AggregateError of them, each message naming its path. */
export const mappingKitValidator = onFirstUse(
  () => (require("@segment/actions-core/mapping-kit/validate") as { default: (mapping: unknown) => void }).default,
);

/** A parsed subscription (trigger), as @segment/destination-subscriptions makes it. */
export type Subscription = { type: string; [key: string]: unknown } | { error: Error };

interface DestinationSubscriptions {
  parseFql(fql: string): Subscription;
  validate(subscription: Subscription, event: unknown): boolean;
}

/** @segment/destination-subscriptions: Segment's subscription language, parsed and applied to an event. */
export const subscriptions = onFirstUse(() => require("@segment/destination-subscriptions") as DestinationSubscriptions);

/** One token of the subscription language. */
export interface FqlToken {
  type: string;
  value: string;
}

/** @segment/fql-ts's lexer, which the parser above uses: a lexing error has its line and column. */
export const fql = onFirstUse(
  () =>
    require("@segment/fql-ts") as {
      lex(code: string): { tokens: FqlToken[]; error?: Error & { cursor: { line: number; column: number } } };
    },
);
