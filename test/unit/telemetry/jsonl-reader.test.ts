import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { readJsonLines } from '../../../src/telemetry/jsonl-reader.js';
import { readAll } from './read-all.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'jsonl-reader-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readJsonLines', () => {
  it('yields nothing for a missing file, without throwing', async () => {
    const { records, summary } = await readAll(join(dir, 'nope', 'runs.jsonl'));
    expect(records).toEqual([]);
    expect(summary).toEqual({ records: 0, invalid: 0, blank: 0 });
  });

  it('skips blank, garbage and non-object lines and counts them', async () => {
    const file = join(dir, 'runs.jsonl');
    await writeFile(
      file,
      [
        '{"n":1}',
        '',
        '   \t',
        'not json at all',
        '[1,2,3]',
        '"a string"',
        '42',
        'null',
        '{"n":2}\r', // CRLF written by some editor: still a record
        '{"n":3,"ts":"2025-11-2', // torn, in the middle (a writer that died before others appended)
        '{"n":4}',
        '',
      ].join('\n'),
    );
    const { records, skipped, summary } = await readAll(file);
    expect(records).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }]);
    expect(summary).toEqual({ records: 3, invalid: 6, blank: 2 });
    expect(skipped.map((s) => [s.lineNumber, s.reason])).toEqual([
      [2, 'blank'],
      [3, 'blank'],
      [4, 'invalid_json'],
      [5, 'not_object'],
      [6, 'not_object'],
      [7, 'not_object'],
      [8, 'not_object'],
      [10, 'invalid_json'],
    ]);
  });

  it('skips a torn last line without newline, but yields a complete one', async () => {
    const torn = join(dir, 'torn.jsonl');
    await writeFile(torn, '{"n":1}\n{"n":2,"pad":"xxxx');
    expect((await readAll(torn)).records).toEqual([{ n: 1 }]);
    expect((await readAll(torn)).skipped).toEqual([{ lineNumber: 2, reason: 'invalid_json', bytes: 18 }]);

    const unterminated = join(dir, 'unterminated.jsonl');
    await writeFile(unterminated, '{"n":1}\n{"n":2}');
    expect((await readAll(unterminated)).records).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('keeps unknown extra fields (newer writers may add fields)', async () => {
    const file = join(dir, 'runs.jsonl');
    const record = { v: 1, run_id: 'r', added_later: { nested: [1, 'two'] }, another: null };
    await writeFile(file, `${JSON.stringify(record)}\n`);
    expect((await readAll(file)).records).toEqual([record]);
  });

  it('reassembles lines that span stream chunks, multi-byte characters included', async () => {
    const file = join(dir, 'big.jsonl');
    // 64 KiB is the read stream's chunk size: these lines straddle several chunk boundaries,
    // and the 4-byte emoji lands across some of them.
    const records = Array.from({ length: 40 }, (_, i) => ({ i, pad: '😀é'.repeat(5_000 + i * 997) }));
    await writeFile(file, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const read = await readAll(file);
    expect(read.summary).toEqual({ records: 40, invalid: 0, blank: 0 });
    expect(read.records).toEqual(records);
  });

  it('stops reading when the consumer breaks early', async () => {
    const file = join(dir, 'runs.jsonl');
    await writeFile(file, '{"n":1}\n{"n":2}\n{"n":3}\n');
    const seen: unknown[] = [];
    for await (const record of readJsonLines(file)) {
      seen.push(record);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('throws on I/O errors other than a missing file', async () => {
    await expect(readAll(dir)).rejects.toMatchObject({ code: 'EISDIR' });
  });
});
