import { describe, expect, it } from 'vitest';
import { cleanStdout, stripTerminalControls } from '../../../src/ollama/clean-output.js';
import { errorFromStderr } from '../../../src/ollama/cli-errors.js';

const SPIN = '\u001b[?2026h\u001b[?25l\u001b[1G\u280b \u001b[K\u001b[?25h\u001b[?2026l';

describe('cleanStdout', () => {
  it('drops the two trailing newlines the CLI adds', () => {
    expect(cleanStdout('hello world\n\n')).toEqual({ answer: 'hello world', thinking: '' });
  });

  it('keeps the thinking block out of the answer', () => {
    const raw = 'Thinking...\nfirst I consider\nthe options\n...done thinking.\n\nThe answer is 4.\n\n';
    expect(cleanStdout(raw)).toEqual({ answer: 'The answer is 4.', thinking: 'first I consider\nthe options' });
  });

  it('a run stopped mid-thinking has no answer yet', () => {
    expect(cleanStdout('Thinking...\nhmm, let me')).toEqual({ answer: '', thinking: 'hmm, let me' });
  });

  it('strips cursor escapes an old CLI might write into stdout', () => {
    expect(cleanStdout('some\u001b[4D\u001b[K\nsome text\n\n').answer).toBe('some\nsome text');
  });

  it('leaves a normal answer that merely mentions thinking alone', () => {
    expect(cleanStdout('I was Thinking... about it\n\n').answer).toBe('I was Thinking... about it');
  });
});

describe('errorFromStderr', () => {
  it('finds the Error: line after spinner escapes', () => {
    const raw = `${SPIN}\u001b[2K\u001b[1GError: could not connect to ollama server, run 'ollama serve' to start it\n`;
    expect(errorFromStderr(raw)).toBe("could not connect to ollama server, run 'ollama serve' to start it");
  });

  it('falls back to the last readable line, and null for only spinner noise', () => {
    expect(errorFromStderr('panic: runtime error\ngoroutine 1\n')).toBe('goroutine 1');
    expect(errorFromStderr(`${SPIN}\u001b[2K\u001b[1G`)).toBeNull();
  });
});

describe('escapes planted in model output or CLI errors (nested ones included)', () => {
  const HOSTILE = [
    '\u001b\u001b[0m[2J', // one pass removes the inner sequence and leaves CSI 2J (clear screen)
    '\u001b[\u001b[0m2J',
    '\u001b\u001b\u001b\u001b\u001b\u001b[0m[0m[0m[0m[0m[2J', // deeper than the passes: the ESC left is removed alone
    '\u001b]52;c;ZXZpbA==\u0007', // OSC 52: write the clipboard
    '\u001b]0;owned\u001b\\', // OSC 0: set the title
    '\u009b2J', // C1 CSI
    'a\u0008\u0008b\u0007c\u0000d\re',
  ];
  const CONTROLS_BUT_TAB_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

  it.each(HOSTILE.map((h) => [JSON.stringify(h), h]))(
    '%s never reaches the answer, the thinking or an error text',
    (_name, hostile) => {
      const cleaned = cleanStdout(`Thinking...\nplan ${hostile}\n...done thinking.\n\nanswer ${hostile} end\n\n`);
      expect(cleaned.answer).not.toMatch(CONTROLS_BUT_TAB_NEWLINE);
      expect(cleaned.thinking).not.toMatch(CONTROLS_BUT_TAB_NEWLINE);
      expect(cleaned.answer.startsWith('answer ')).toBe(true);
      expect(errorFromStderr(`${SPIN}Error: bad ${hostile} thing\n`)).not.toMatch(CONTROLS_BUT_TAB_NEWLINE);
    },
  );

  it('strips to a fixed point: cleaning again changes nothing', () => {
    for (const hostile of HOSTILE) {
      const once = stripTerminalControls(`x${hostile}y\tz\nw`);
      expect(stripTerminalControls(once)).toBe(once);
      expect(once).toContain('\tz\nw');
    }
    expect(stripTerminalControls('\u001b\u001b[0m[2J')).toBe('');
  });

  it('leaves an answer without control characters as it is', () => {
    const text = `plain ${'x'.repeat(100)}\n\twith tab\n`;
    expect(stripTerminalControls(text)).toBe(text);
  });
});
