/**
 * The timestamp rule: ISO 8601 text that names a real instant. Date.parse
 * rolls impossible dates over ("2026-02-30" becomes March 2) instead of
 * refusing them, so the parts are checked here first.
 */

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?$/;
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether text is an ISO 8601 date or date-time of the forms calls may use
 * (YYYY-MM-DD, then optionally T or space, HH:MM[:SS[.fraction]] and Z or
 * ±HH[:]MM) and every part is in range: month 1-12, day within its month
 * (February 29 in leap years only), hour 0-23, minute 0-59, second 0-59 (a
 * leap second, 60, is refused: a JavaScript Date cannot hold it), offset
 * hours 0-23 and minutes 0-59. Also requires Date.parse to read it.
 */
export function isValidIsoDateTime(text: string): boolean {
  const parts = ISO_8601.exec(text);
  if (!parts) return false;
  const year = Number(parts[1]);
  const month = Number(parts[2]);
  const day = Number(parts[3]);
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > DAYS_IN_MONTH[month]! && !(month === 2 && day === 29 && isLeapYear(year))) return false;
  if (parts[4] !== undefined && (Number(parts[4]) > 23 || Number(parts[5]) > 59)) return false;
  if (parts[6] !== undefined && Number(parts[6]) > 59) return false;
  if (parts[7] !== undefined && (Number(parts[7]) > 23 || Number(parts[8]) > 59)) return false;
  return !Number.isNaN(Date.parse(text));
}

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}
