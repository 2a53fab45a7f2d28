import { stripVTControlCharacters } from 'node:util';

const THINKING_START = 'Thinking...\n';
const THINKING_END = '\n...done thinking.\n\n';

/** Control characters (C0, DEL, C1) but tab and newline, which a multi-line text keeps. */
const CONTROLS_BUT_TAB_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const STRIP_PASSES = 4;

/**
 * A text safe to print on a terminal: escape sequences removed whole, then every control character
 * left but tab and newline. Each pass removes one level of a nested sequence (`\x1b\x1b[0m[2J`);
 * whatever deeper nesting leaves loses its ESC, so no sequence is left to act on. Idempotent.
 */
export function stripTerminalControls(text: string): string {
  let out = text;
  for (let pass = 0; pass < STRIP_PASSES && out.includes('\u001b'); pass++) out = stripVTControlCharacters(out);
  return out.replace(/\r\n/g, '\n').replace(CONTROLS_BUT_TAB_NEWLINE, '');
}

export interface CleanedOutput {
  /** The model's answer: no escapes, no thinking block, no trailing blank lines. */
  readonly answer: string;
  /** The thinking text, when the model printed one (`''` otherwise). */
  readonly thinking: string;
}

/**
 * Turn the CLI's stdout into the answer and the thinking block before it (`Thinking...` ...
 * `...done thinking.`), without control characters: an old CLI may ignore `--nowordwrap`, and a
 * model may print anything.
 */
export function cleanStdout(raw: string): CleanedOutput {
  const text = stripTerminalControls(raw);
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

/**
 * The CLI's sign-in notice for a cloud model, and nothing else: it is printed to stdout from byte 0
 * (with exit 0) instead of an answer. `If your browser did not open` since v0.16, `To sign in` in
 * v0.13-v0.15; the URL line is missing when the server sent none. An answer that merely quotes the
 * sentence does not match.
 */
const SIGNIN_NOTICE =
  /^You need to be signed in to Ollama to run Cloud models\.\n+(?:(?:If your browser did not open|To sign in), navigate to:\n[ \t]*\S+\n*)?$/;
/** The notice is a few hundred characters: a longer output is an answer. */
const SIGNIN_NOTICE_MAX_CHARS = 4096;

export function isSigninNotice(rawStdout: string): boolean {
  return (
    rawStdout.length <= SIGNIN_NOTICE_MAX_CHARS && SIGNIN_NOTICE.test(stripVTControlCharacters(rawStdout).replace(/\r\n/g, '\n'))
  );
}

/** The sign-in URL of the notice (a human opens it to connect this machine), or `null`. */
export function signinUrl(rawStdout: string): string | null {
  return /navigate to:\r?\n[ \t]*(\S+)/.exec(stripVTControlCharacters(rawStdout))?.[1] ?? null;
}

/**
 * An embedding model's answer to `ollama run`: one JSON array of numbers, as Go's json.Marshal
 * prints it, and a single newline. A generating model's answer always ends with two newlines, so a
 * model asked for a list of numbers does not match.
 */
const EMBEDDING_VECTOR = /^\[-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:,-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)*\]\n$/;

export function isEmbeddingVector(rawStdout: string): boolean {
  return EMBEDDING_VECTOR.test(rawStdout.replace(/\r\n/g, '\n'));
}
