/**
 * Date#toISOString, made cheap for the dates calls carry.
 *
 * ingest converts every gRPC call's timestamp to ISO 8601 text so that the
 * call rules can check it, and V8's toISOString is a noticeable part of
 * checking a call. Dates in
 * years 0000-9999 are formatted here from whole-day arithmetic (the days
 * since the epoch to a civil date, after Howard Hinnant's days_from_civil
 * inverse), with the date part kept from the previous call, since the
 * timestamps of one batch mostly fall on one day; every other Date is left
 * to toISOString.
 */

const MS_PER_DAY = 86_400_000;
/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: where toISOString prints four-digit years. */
const FIRST_FOUR_DIGIT_YEAR_MS = -62_167_219_200_000;
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, "0"));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, "0"));

let lastDay = Number.NaN;
let lastDayText = "";

/** The text toISOString() returns for this Date; "Invalid Date" for an invalid one (toISOString would throw). */
export function isoText(date: Date): string {
  const millis = date.getTime();
  return Number.isNaN(millis) ? "Invalid Date" : isoTextOfTime(millis);
}

/**
 * The text `new Date(time).toISOString()` returns, without the Date (a Date
 * drops fractions of a millisecond, and so does this); throws like it for a
 * time no Date can hold.
 */
export function isoTextOfTime(time: number): string {
  const millis = Math.trunc(time);
  if (!(millis >= FIRST_FOUR_DIGIT_YEAR_MS && millis <= LAST_FOUR_DIGIT_YEAR_MS)) return new Date(millis).toISOString();
  const day = Math.floor(millis / MS_PER_DAY);
  if (day !== lastDay) {
    lastDayText = civilDateText(day);
    lastDay = day;
  }
  let rest = millis - day * MS_PER_DAY;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1_000);
  return `${lastDayText}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[rest - seconds * 1_000]}Z`;
}

/**
 * Whether isoText(date) is the 24-character form YYYY-MM-DDTHH:MM:SS.sssZ,
 * which the timestamp rule accepts (every other Date's text it refuses: an
 * invalid Date, or a six-digit year with its sign).
 */
export function hasFourDigitYear(date: Date): boolean {
  return isFourDigitYearTime(date.getTime());
}

/** hasFourDigitYear for a time in milliseconds since the epoch, as a Date holds it (false for NaN). */
export function isFourDigitYearTime(millis: number): boolean {
  return millis >= FIRST_FOUR_DIGIT_YEAR_MS && millis <= LAST_FOUR_DIGIT_YEAR_MS;
}

/** The length of isoText(date), without building the text for the usual dates. */
export function isoTextLength(date: Date): number {
  return hasFourDigitYear(date) ? ISO_TEXT_LENGTH : isoText(date).length;
}

/** The length of the ISO text of a Date whose year has four digits. */
export const ISO_TEXT_LENGTH = "YYYY-MM-DDTHH:MM:SS.sssZ".length;

/** "YYYY-MM-DDT" of the day `day` days after 1970-01-01 (negative before), in the proleptic Gregorian calendar. */
function civilDateText(day: number): string {
  // Shift the epoch to 0000-03-01, so that leap days end each 400-year era.
  const shifted = day + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const dayOfMonth = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return `${String(year).padStart(4, "0")}-${TWO_DIGITS[month]}-${TWO_DIGITS[dayOfMonth]}T`;
}
