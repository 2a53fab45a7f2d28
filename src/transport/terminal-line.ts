/**
 * One diagnostic line for stderr, safe to show on a terminal: the transports log what clients
 * sent (a line that is not JSON, a header), and a control character in it would be acted on by
 * the terminal (OSC 52 sets the clipboard, `ESC [2J` clears the screen, a bidi override reorders
 * the text). Such characters are shown escaped (`\x1b`, `\u202e`) and a long text is cut. Pure.
 */

/** Characters a terminal may act on: C0 (newline and tab included: one log is one line), DEL, C1, line and bidi controls. */
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** The longest line written, in characters, before ` ... (N more characters)`. */
export const MAX_LINE_CHARS = 2000;

export function terminalLine(text: string, maxChars: number = MAX_LINE_CHARS): string {
  if (text.length <= maxChars && !UNSAFE.test(text)) return text;
  let out = '';
  let i = 0;
  for (; i < text.length; i += 1) {
    const char = text[i]!;
    const shown = UNSAFE.test(char) ? escape(char) : char;
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

function escape(char: string): string {
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
