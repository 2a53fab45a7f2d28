import { createReadStream } from 'node:fs';

import { parseLine, type JsonObject, type SkipReason } from '../../src/telemetry/jsonl-reader.js';

// A second, independent reader of JSON lines (an async generator with line numbers), used by tests
// to read what the appender wrote and as the oracle the report's reader is checked against.

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
  readonly records: number;
  readonly invalid: number;
  readonly blank: number;
}

export type { JsonObject, SkipReason };

/**
 * Yields each line of a JSON-lines file that parses to a JSON object, streaming, and reports the
 * others through `onSkip` and the returned summary. A missing file yields nothing; other I/O
 * errors are thrown.
 */
export async function* readJsonLines(
  filePath: string,
  options: { readonly onSkip?: (skipped: SkippedLine) => void } = {},
): AsyncGenerator<JsonObject, JsonLinesSummary, undefined> {
  const counts = { records: 0, invalid: 0, blank: 0 };
  let lineNumber = 0;
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
      for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
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
