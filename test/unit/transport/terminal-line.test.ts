import { describe, expect, it } from 'vitest';
import { MAX_LINE_CHARS, terminalLine } from '../../../src/transport/terminal-line.js';

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('terminalLine', () => {
  it('leaves plain text as it is', () => {
    expect(terminalLine('refused a request with Host "evil.example.com" (403) — ünïcode')).toBe(
      'refused a request with Host "evil.example.com" (403) — ünïcode',
    );
  });

  it('shows escape sequences, newlines, C1 and bidi controls escaped', () => {
    expect(terminalLine('a\u001b]52;c;aGk=\u0007b')).toBe('a\\x1b]52;c;aGk=\\x07b');
    expect(terminalLine('\u001b[2Jx\ny\tz\r')).toBe('\\x1b[2Jx\\x0ay\\x09z\\x0d');
    expect(terminalLine('\u009b31m \u007f')).toBe('\\x9b31m \\x7f');
    expect(terminalLine('abc\u202edcba\u2066 \u2028')).toBe('abc\\u202edcba\\u2066 \\u2028');
  });

  it('cuts a long text, saying how much was left out, without splitting an escape or a surrogate pair', () => {
    const long = 'x'.repeat(5000);
    const cut = terminalLine(long);
    expect(cut).toBe(`${'x'.repeat(MAX_LINE_CHARS)} ... (3000 more characters)`);
    expect(terminalLine('ab\u001bcd', 4)).toBe('ab ... (3 more characters)');
    expect(terminalLine('ab\u{1F600}cd', 3)).toBe('ab ... (4 more characters)');
  });

  it('never lets a raw control character through, whatever the input', () => {
    let all = '';
    for (let code = 0; code < 0x3000; code += 1) all += String.fromCharCode(code);
    expect(terminalLine(all, 100_000)).not.toMatch(RAW_CONTROL);
  });
});
