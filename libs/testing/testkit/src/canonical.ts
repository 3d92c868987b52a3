/**
 * A value written out with everything a decoder could get wrong: key order,
 * undefined members, prototypes, Dates, NaN and -0. (toStrictEqual would do,
 * except that it compares objects' `constructor` members by identity, and a
 * free-form object may have a key named so.)
 */
export function canonical(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : String(value);
  if (typeof value !== "object") return JSON.stringify(value);
  if (value instanceof Date) return `Date(${value.getTime()})`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const prototype = Object.getPrototypeOf(value) === Object.prototype ? "" : "(other prototype)";
  const members = Object.keys(value).map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
  return `${prototype}{${members.join(",")}}`;
}
