/** Character codes of `YYYY-MM-DDTHH:MM:SS.sssZ`: digits are `0`, the rest must match exactly. */
const TEMPLATE = '0000-00-00T00:00:00.000Z';
/** `YYYY-MM-DDTHH:MM`: the part of a time that consecutive log lines share. */
const MINUTE_LENGTH = 16;

/** The minute of the last time read the long way, and its epoch milliseconds (lines come in time order). */
let lastMinute = '';
let lastMinuteMs = 0;

/**
 * `Date.parse(text)`, with a fast path for the one form the server writes (`toISOString()`:
 * `2025-11-22T10:15:30.123Z`). Within it only dates that `Date.UTC` reads the same way are taken
 * (years 1000 to 9999, days up to 28, hours up to 23); anything else, including every other form
 * `Date.parse` accepts, goes to `Date.parse`. A time in the same minute as the previous one only has
 * its seconds read (log lines come in time order: nearly every line). About ten times cheaper than
 * `Date.parse` on a million lines.
 */
export function parseIsoTime(text: string): number {
  if (text.length !== TEMPLATE.length) return Date.parse(text);
  if (lastMinute !== '' && text.startsWith(lastMinute)) {
    const ms = secondsAndMillis(text);
    if (ms >= 0) return lastMinuteMs + ms;
  }
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
  const ms = secondsAndMillis(text);
  if (year < 1000 || month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || ms < 0)
    return Date.parse(text);
  lastMinuteMs = Date.UTC(year, month - 1, day, hour, minute);
  lastMinute = text.slice(0, MINUTE_LENGTH); // may keep one caller's string alive: one line at most
  return lastMinuteMs + ms;
}

/**
 * Milliseconds into the minute of `…:SS.sssZ` (seconds up to 59), or -1 when the tail is not that.
 * Straight-line, as this runs for nearly every line of a log: a loop over the template cost twice
 * as much.
 */
function secondsAndMillis(text: string): number {
  if (text.charCodeAt(16) !== 0x3a || text.charCodeAt(19) !== 0x2e || text.charCodeAt(23) !== 0x5a) return -1;
  const s1 = text.charCodeAt(17) - 0x30;
  const s2 = text.charCodeAt(18) - 0x30;
  const m1 = text.charCodeAt(20) - 0x30;
  const m2 = text.charCodeAt(21) - 0x30;
  const m3 = text.charCodeAt(22) - 0x30;
  // Unsigned: a character below '0' wraps to a huge number, so one comparison checks both ends.
  if (s1 >>> 0 > 5 || s2 >>> 0 > 9 || m1 >>> 0 > 9 || m2 >>> 0 > 9 || m3 >>> 0 > 9) return -1;
  return (s1 * 10 + s2) * 1000 + m1 * 100 + m2 * 10 + m3;
}

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) n = n * 10 + (text.charCodeAt(i) - 0x30);
  return n;
}
