/** Character codes of `YYYY-MM-DDTHH:MM:SS.sssZ`: digits are `0`, the rest must match exactly. */
const TEMPLATE = '0000-00-00T00:00:00.000Z';

/**
 * `Date.parse(text)`, with a fast path for the one form the server writes (`toISOString()`:
 * `2025-11-22T10:15:30.123Z`). Within it only dates that `Date.UTC` reads the same way are taken
 * (years 1000 to 9999, days up to 28, hours up to 23); anything else, including every other form
 * `Date.parse` accepts, goes to `Date.parse`. About ten times cheaper on a million lines.
 */
export function parseIsoTime(text: string): number {
  if (text.length !== TEMPLATE.length) return Date.parse(text);
  for (let i = 0; i < TEMPLATE.length; i++) {
    const c = text.charCodeAt(i);
    const t = TEMPLATE.charCodeAt(i);
    if (t === 0x30 ? c < 0x30 || c > 0x39 : c !== t) return Date.parse(text);
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (year < 1000 || month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || second > 59)
    return Date.parse(text);
  return Date.UTC(year, month - 1, day, hour, minute, second, digits(text, 20, 3));
}

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) n = n * 10 + (text.charCodeAt(i) - 0x30);
  return n;
}
