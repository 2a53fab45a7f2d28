/**
 * Text safe to show on a terminal, for anything that came from outside: a client's arguments, a log
 * line, the `ollama` CLI or the remote server behind it (a version string, an error tail). A terminal
 * acts on control characters (OSC 52 sets the clipboard, `ESC ]0;` the window title, `ESC [2J` clears
 * the screen) and a bidi control reorders the text around it (U+202E shows `txt.exe` as `exe.txt`).
 * Each such character is shown as a visible escape (`\x1b`, `\u202e`) instead, so the reader sees
 * what was there and the terminal obeys none of it. The stderr logs, the text report, `doctor` and
 * `ollama_health`'s text all go through here. Pure.
 */

/**
 * C0 (newline and tab included: a field shown on one line stays on it), DEL, C1, the line and
 * paragraph separators, and the marks and controls that reorder text (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069).
 */
const UNSAFE_CHARS = '\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
const UNSAFE = new RegExp(`[${UNSAFE_CHARS}]`);
const EVERY_UNSAFE = new RegExp(`[${UNSAFE_CHARS}]`, 'g');

/** Whether a terminal could act on `text` (or reorder it). */
export function hasUnsafeChars(text: string): boolean {
  return UNSAFE.test(text);
}

/** `char` as a terminal may show it: itself, or its escape when it is unsafe. */
export function visibleChar(char: string): string {
  return UNSAFE.test(char) ? escapeChar(char) : char;
}

/** `text` with every unsafe character shown as its escape. Idempotent: an escape holds no unsafe character. */
export function terminalText(text: string): string {
  return text.replace(EVERY_UNSAFE, escapeChar);
}

function escapeChar(char: string): string {
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
