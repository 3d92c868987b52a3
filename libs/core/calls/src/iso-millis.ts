/**
 * Reading the usual timestamp text once, by hand: "2026-11-21T10:00:00.000Z", or with one to
 * three digits of milliseconds, or none. The quick check of a call (quick-accept.ts) needs to know
 * the text is a real date and the client's encoder needs its milliseconds; a regular expression plus
 * Date.parse, twice, would cost more than the rest of the check. Anything else (offsets, impossible
 * dates such as February 30, which Date.parse rolls over, hour 24) gives NaN here and is left to
 * Date.parse and the call rules.
 */

const MS_PER_DAY = 86_400_000;
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The text read last and what it gave: a call's timestamp is read by the quick check and then by
 * the encoder, the same string each time, which compares equal at once.
 */
let lastText = "";
let lastMillis = Number.NaN;

/** Milliseconds since the epoch of "YYYY-MM-DDTHH:MM:SS[.s|.ss|.sss]Z", exactly as Date.parse reads it; NaN for any other text. */
export function simpleIsoMillis(text: string): number {
  if (text === lastText) return lastMillis;
  lastMillis = readIsoMillis(text);
  lastText = text;
  return lastMillis;
}

function readIsoMillis(text: string): number {
  const length = text.length;
  if (length !== 20 && (length < 22 || length > 24)) return Number.NaN;
  if (
    text.charCodeAt(4) !== 0x2d || // -
    text.charCodeAt(7) !== 0x2d ||
    text.charCodeAt(10) !== 0x54 || // T
    text.charCodeAt(13) !== 0x3a || // :
    text.charCodeAt(16) !== 0x3a ||
    text.charCodeAt(length - 1) !== 0x5a // Z
  ) {
    return Number.NaN;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  let millis = 0;
  if (length > 20) {
    if (text.charCodeAt(19) !== 0x2e) return Number.NaN; // .
    const fraction = length - 21;
    millis = digits(text, 20, fraction) * (fraction === 1 ? 100 : fraction === 2 ? 10 : 1);
  }
  // NaN (a non-digit) fails every comparison, so it ends here too.
  if (!(month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 59 && millis >= 0)) return Number.NaN;
  if (!(day <= DAYS_IN_MONTH[month]! || (month === 2 && day === 29 && isLeapYear(year)))) return Number.NaN;
  return daysFromCivil(year, month, day) * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000 + millis;
}

/** The timestamp text's milliseconds: read by hand in the usual form, by Date.parse otherwise. */
export function isoMillis(text: string): number {
  const millis = simpleIsoMillis(text);
  return Number.isNaN(millis) ? Date.parse(text) : millis;
}

/** The decimal number in text[start, start + count); NaN if a character is not a digit. */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let index = start; index < start + count; index++) {
    const digit = text.charCodeAt(index) - 0x30;
    if (!(digit >= 0 && digit <= 9)) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

/** Days from 1970-01-01 to the date, in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  // Years counted from March, so that leap days end each 400-year era.
  const shiftedYear = month <= 2 ? year - 1 : year;
  const era = Math.floor(shiftedYear / 400);
  const yearOfEra = shiftedYear - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
