import { describe, expect, it } from 'vitest';
import { cleanStdout } from '../../../src/ollama/clean-output.js';
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
