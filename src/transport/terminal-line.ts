import { hasUnsafeChars, visibleChar } from '../ollama/terminal-text.js';

/**
 * One diagnostic line for stderr, safe to show on a terminal: the transports log what clients
 * sent (a line that is not JSON, a header). Every character a terminal would act on is shown
 * escaped (see `terminalText`), newlines included, and a long text is cut. Pure.
 */

/** The longest line written, in characters, before ` ... (N more characters)`. */
export const MAX_LINE_CHARS = 2000;

export function terminalLine(text: string, maxChars: number = MAX_LINE_CHARS): string {
  if (text.length <= maxChars && !hasUnsafeChars(text)) return text;
  let out = '';
  let i = 0;
  for (; i < text.length; i += 1) {
    const shown = visibleChar(text[i]!);
    if (out.length + shown.length > maxChars) break;
    out += shown;
  }
  if (i === text.length) return out;
  // Never end on half a surrogate pair.
  if (/[\ud800-\udbff]$/.test(out)) {
    out = out.slice(0, -1);
    i -= 1;
  }
  return `${out} ... (${text.length - i} more characters)`;
}
