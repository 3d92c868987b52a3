/**
 * Request headers in any of the shapes receivers have at hand: node:http's
 * `IncomingHttpHeaders` (lower-case names, string or string[] values), a
 * Fetch API `Headers` object, or a plain record with any casing.
 */
export type HeadersLike = { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

/** One header's value; repeated headers are joined with ", " as HTTP allows. Undefined when absent. */
export function headerValue(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  let value = record[name];
  if (value === undefined) {
    const wanted = name.toLowerCase();
    const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === wanted);
    value = key === undefined ? undefined : record[key];
  }
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : value.join(", ");
}
