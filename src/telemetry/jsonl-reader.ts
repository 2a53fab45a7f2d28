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

/** Counts returned by {@link forEachJsonLine}. */
export interface JsonLineCounts {
  /** Objects passed to `onRecord`. */
  readonly records: number;
  /** Lines skipped as `invalid_json` or `not_object`: torn or foreign lines. */
  readonly invalid: number;
  /** Blank lines skipped. */
  readonly blank: number;
}

const NEWLINE = 0x0a;
/** Bytes read at a time: a large log costs one event-loop turn per MiB, not per 64 KiB. */
const CHUNK_BYTES = 1 << 20;

/**
 * Calls `onRecord` for each line of a JSON-lines file that parses to an object, and `onSkip` for
 * every other line (blank, torn, not an object), streaming: memory is bounded by the read size and
 * the longest line. Lines end at the byte `\n` only (never inside a UTF-8 sequence; a lone `\r` does
 * not end a line, so line numbers match `sed` and `jq`). A last line without `\n` is a record when
 * it parses: a torn prefix of an object never does.
 *
 * A missing file reads as empty. Other I/O errors (permission, a directory) reject, as does a
 * callback that throws.
 */
export async function forEachJsonLine(
  filePath: string,
  onRecord: (record: JsonObject) => void,
  onSkip: (reason: SkipReason) => void,
): Promise<JsonLineCounts> {
  const counts = { records: 0, invalid: 0, blank: 0 };
  const line = (bytes: Buffer): void => {
    const result = parseLine(bytes.toString('utf8'));
    if (typeof result !== 'string') {
      counts.records += 1;
      onRecord(result);
      return;
    }
    if (result === 'blank') counts.blank += 1;
    else counts.invalid += 1;
    onSkip(result);
  };
  let pending: Buffer[] = []; // the start of a line that goes on in the next chunk
  try {
    for await (const chunk of createReadStream(filePath, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
      let start = 0;
      for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
        pending.push(chunk.subarray(start, end));
        line(pending.length === 1 ? pending[0]! : Buffer.concat(pending));
        pending = [];
        start = end + 1;
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return counts;
  }
  if (pending.length > 0) line(Buffer.concat(pending));
  return counts;
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
