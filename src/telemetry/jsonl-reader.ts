import { createReadStream } from 'node:fs';

/** Why a line was not passed on as a record. */
export type SkipReason =
  /** Empty or whitespace only (two writers both repairing the same torn line leave one). */
  | 'blank'
  /** Not parseable: typically the torn last line of a writer killed mid-write. */
  | 'invalid_json'
  /** Valid JSON, but not an object (array, string, number...). */
  | 'not_object';

/** A parsed line: a JSON object with whatever fields it had (unknown ones are kept). */
export type JsonObject = Record<string, unknown>;

/** Read 1 MiB at a time: a large log costs one event-loop turn per MiB. */
const CHUNK_BYTES = 1 << 20;

/**
 * Calls `onRecord` for each line of a JSON-lines file that parses to an object, and `onSkip` for
 * every other line, streaming. Lines end at `\n` only, so line numbers match `sed` and `jq`; a last
 * line without `\n` is a record when it parses (a torn prefix of an object never does). A missing
 * file reads as empty; other I/O errors reject, as does a callback that throws.
 */
export async function forEachJsonLine(
  filePath: string,
  onRecord: (record: JsonObject) => void,
  onSkip: (reason: SkipReason) => void,
): Promise<void> {
  const take = (text: string): void => {
    const result = parseLine(text);
    if (typeof result === 'string') onSkip(result);
    else onRecord(result);
  };
  const chunks = createReadStream(filePath, { encoding: 'utf8', highWaterMark: CHUNK_BYTES }) as AsyncIterable<string>;
  let rest = ''; // the start of a line that goes on in the next chunk
  try {
    for await (const chunk of chunks) {
      const lines = chunk.split('\n');
      lines[0] = rest + lines[0];
      rest = lines.pop()!;
      for (const text of lines) take(text);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return;
  }
  if (rest !== '') take(rest);
}

/** One line of a JSON-lines file: the object, or why it is skipped. */
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
