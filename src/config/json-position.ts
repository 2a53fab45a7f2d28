/**
 * Why JSON.parse refused a text, and where: `invalid JSON at line 3 column 5 (position 41): <reason>`.
 * V8 gives the position in most messages; `findJsonError` finds it for the others.
 */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const reported = /\bat position (\d+)/.exec(message);
  const position = reported ? Number(reported[1]) : findJsonError(text);
  // V8 quotes (part of) the file in some messages: keep only the reason.
  const reason = message
    .replace(/, ".*" is not valid JSON$/s, '')
    .replace(/ in JSON at position \d+.*$/s, '')
    .replace(/ at position \d+.*$/s, '');
  const where = position === null ? '' : ` at ${lineColumn(text, position)}`;
  return `invalid JSON${where}: ${reason}`;
}

function lineColumn(text: string, position: number): string {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `line ${line} column ${column} (position ${position})`;
}

/**
 * Offset of the first JSON syntax error (null if the text parses): the shortest prefix JSON.parse
 * refuses before its end ends just past it, and every shorter one is valid so far, so bisection finds it.
 */
export function findJsonError(text: string): number | null {
  if (failsBefore(text, text.length)) {
    let low = 1;
    let high = text.length;
    while (low < high) {
      const middle = Math.floor((low + high) / 2);
      if (failsBefore(text, middle)) high = middle;
      else low = middle + 1;
    }
    return low - 1;
  }
  try {
    JSON.parse(text);
    return null;
  } catch {
    return text.length; // the text ends too soon
  }
}

/** Whether JSON.parse refuses `text.slice(0, end)` before its end (not for ending too soon). */
function failsBefore(text: string, end: number): boolean {
  try {
    JSON.parse(text.slice(0, end));
    return false;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message.startsWith('Unexpected end of JSON input')) return false;
    const reported = /\bat position (\d+)/.exec(message);
    return reported === null || Number(reported[1]) < end;
  }
}
