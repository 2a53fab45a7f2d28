import { describe, expect, it } from 'vitest';
import { hasUnsafeChars, terminalText } from '../../../src/ollama/terminal-text.js';

/** Every character a terminal acts on, or that reorders the text around it. */
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('terminalText: one neutralizer for what a terminal shows', () => {
  it('leaves ordinary text alone, other languages and emoji included', () => {
    for (const text of ['llama3.2:latest', 'ünïcode — 日本語 עברית العربية 😀', '/tmp/a b/runs.jsonl']) {
      expect(terminalText(text)).toBe(text);
      expect(hasUnsafeChars(text)).toBe(false);
    }
  });

  it('shows C0, DEL and C1 as \\xNN: an OSC 52 clipboard write and a title change are shown, not obeyed', () => {
    expect(terminalText('0.12.0\u001b]52;c;ZXZpbA==\u0007')).toBe('0.12.0\\x1b]52;c;ZXZpbA==\\x07');
    expect(terminalText('\u001b]0;owned\u0007')).toBe('\\x1b]0;owned\\x07');
    expect(terminalText('a\nb\tc\r\u007f\u009b31m')).toBe('a\\x0ab\\x09c\\x0d\\x7f\\x9b31m');
  });

  it('shows the controls and marks that reorder text as \\uNNNN', () => {
    expect(terminalText('invoice\u202egpj.exe')).toBe('invoice\\u202egpj.exe');
    const reorder = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029';
    expect(terminalText(reorder)).toBe(
      '\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c\\u2028\\u2029',
    );
  });

  it('lets no raw one through, whatever the input, and is idempotent', () => {
    let all = '';
    for (let code = 0; code < 0x3000; code += 1) all += String.fromCharCode(code);
    const shown = terminalText(all);
    expect(shown).not.toMatch(RAW);
    expect(terminalText(shown)).toBe(shown);
  });
});
