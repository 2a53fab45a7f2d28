import { createReadStream } from 'node:fs';

/** Why a line was not yielded. */
export type SkipReason =
  /** Empty or whitespace only (two writers both repairing the same torn line leave one). */
  | 'blank'
  /** Not parseable: typically the torn last line of a writer killed mid-write. */
  | 'invalid_json'
  /** Valid JSON, but not an object (array, string, number...). */
  | 'not_object';

/** A line {@link readJsonLines} skipped. */
export interface SkippedLine {
  /** 1-based, counted like `sed -n Np` / `wc -l` (lines end at `\n` only). */
  readonly lineNumber: number;
  readonly reason: SkipReason;
  /** Length of the line in bytes, without its `\n`. */
  readonly bytes: number;
}

/** Counts returned when the generator finishes (the `value` of its final `next()`). */
export interface JsonLinesSummary {
  /** Objects yielded. */
  readonly records: number;
  /** Lines skipped as `invalid_json` or `not_object`: torn or foreign lines. */
  readonly invalid: number;
  /** Blank lines skipped. */
  readonly blank: number;
}

/** Options of {@link readJsonLines}. */
export interface ReadJsonLinesOptions {
  /** Called for every skipped line, blank ones included. */
  readonly onSkip?: (skipped: SkippedLine) => void;
}

/** A parsed line: a JSON object with whatever fields it had (unknown ones are kept). */
export type JsonObject = Record<string, unknown>;

const NEWLINE = 0x0a;

/**
 * Yields each line of a JSON-lines file that parses to a JSON object, streaming: memory is bounded
 * by the longest line, not the file. Skips blank and unparseable lines (a torn last line left by a
 * crashed writer) and reports them through `onSkip` and the returned {@link JsonLinesSummary}.
 * A last line without `\n` is still yielded when it parses: a torn prefix of an object never does.
 *
 * A missing file yields nothing. Other I/O errors (permission, a directory) are thrown.
 *
 * @example
 * let skipped = 0;
 * for await (const rec of readJsonLines(path, { onSkip: () => skipped++ })) use(rec);
 */
export async function* readJsonLines(
  filePath: string,
  options: ReadJsonLinesOptions = {},
): AsyncGenerator<JsonObject, JsonLinesSummary, undefined> {
  const counts = { records: 0, invalid: 0, blank: 0 };
  let lineNumber = 0;

  // Split on the byte 0x0A ourselves rather than with `readline`: it never occurs inside a
  // multi-byte UTF-8 sequence, and readline also splits on a lone `\r`, which would shift
  // line numbers away from what `sed`/`jq` show.
  function* parse(bytes: Buffer): Generator<JsonObject> {
    lineNumber += 1;
    const result = parseLine(bytes.toString('utf8'));
    if (typeof result === 'string') {
      if (result === 'blank') counts.blank += 1;
      else counts.invalid += 1;
      options.onSkip?.({ lineNumber, reason: result, bytes: bytes.length });
      return;
    }
    counts.records += 1;
    yield result;
  }

  let pending: Buffer[] = [];
  try {
    for await (const chunk of createReadStream(filePath) as AsyncIterable<Buffer>) {
      let start = 0;
      for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
        pending.push(chunk.subarray(start, end));
        yield* parse(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
        pending = [];
        start = end + 1;
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return counts;
  }
  if (pending.length > 0) yield* parse(Buffer.concat(pending));
  return counts;
}

/** One line of a JSON-lines file: the object, or why it is skipped. Shared by every reader. */
export function parseLine(text: string): JsonObject | SkipReason {
  if (text.trim() === '') return 'blank';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'invalid_json';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not_object';
  return value as JsonObject;
}
