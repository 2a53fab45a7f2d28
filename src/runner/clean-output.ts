import { stripVTControlCharacters } from 'node:util';

const THINKING_START = 'Thinking...\n';
const THINKING_END = '\n...done thinking.\n\n';

export interface CleanedOutput {
  /** The model's answer: no escapes, no thinking block, no trailing blank lines. */
  readonly answer: string;
  /** The thinking text, when the model printed one (`''` otherwise). */
  readonly thinking: string;
}

/**
 * Turn the CLI's stdout into the answer. The CLI prints a thinking block before the answer for
 * thinking models (`Thinking...` ... `...done thinking.`), and ends every answer with two
 * newlines. Escapes are stripped in case an old CLI ignored `--nowordwrap`.
 */
export function cleanStdout(raw: string): CleanedOutput {
  const text = stripVTControlCharacters(raw).replace(/\r\n/g, '\n');
  if (!text.startsWith(THINKING_START)) return { answer: text.trimEnd(), thinking: '' };
  const end = text.indexOf(THINKING_END, THINKING_START.length - 1);
  if (end === -1) {
    // Stopped while still thinking (timeout, cancel, output cap): no answer yet.
    return { answer: '', thinking: text.slice(THINKING_START.length).trimEnd() };
  }
  return {
    thinking: text.slice(THINKING_START.length, end).trim(),
    answer: text.slice(end + THINKING_END.length).trimEnd(),
  };
}

/** Braille spinner frames the CLI draws on stderr. */
const SPINNER_FRAMES = /[\u2800-\u28ff]/g;

/**
 * The CLI's error line from its stderr (`Error: <message>`, after the spinner escapes), or the last
 * non-empty line when there is none. `null` when stderr says nothing readable.
 */
export function errorFromStderr(raw: string): string | null {
  const lines = stripVTControlCharacters(raw)
    .replace(SPINNER_FRAMES, '')
    .split(/\r?\n|\r/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const errorLine = lines.findLast((line) => line.startsWith('Error: '));
  if (errorLine) return errorLine.slice('Error: '.length);
  return lines.at(-1) ?? null;
}
