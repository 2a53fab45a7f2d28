import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { forEachJsonLine, type JsonObject, type SkipReason } from '../../../src/telemetry/jsonl-reader.js';
import { readJsonLines } from '../../helpers/read-json-lines.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('jsonl-reader-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function read(file: string) {
  const got = { records: [] as JsonObject[], skips: [] as SkipReason[] };
  await forEachJsonLine(
    file,
    (r) => got.records.push(r),
    (s) => got.skips.push(s),
  );
  return got;
}

/** Both readers on the same bytes: forEachJsonLine, and the generator in test/helpers as the oracle. */
async function both(content: string | Buffer) {
  const file = join(dir, 'runs.jsonl');
  await writeFile(file, content);
  const ours = await read(file);
  const theirs = { records: [] as JsonObject[], skips: [] as SkipReason[] };
  for await (const r of readJsonLines(file, { onSkip: (s) => theirs.skips.push(s.reason) })) theirs.records.push(r);
  return { ours, theirs };
}

describe('forEachJsonLine', () => {
  it('skips blank, garbage, non-object and torn lines, for the reasons the oracle gives', async () => {
    const { ours, theirs } = await both(
      [
        '{"n":1}',
        '',
        '   \t',
        'not json',
        '[1,2]',
        '"s"',
        '42',
        'null',
        '{"n":2}\r', // CRLF written by some editor: still a record
        '{"n":3,"ts":"2025-11-2', // torn, in the middle (a writer that died before others appended)
        '{"n":4}',
        '{"n":5,"torn',
      ].join('\n'),
    );
    expect(ours).toEqual(theirs);
    expect(ours.records).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }]);
    expect(ours.skips).toEqual([
      'blank',
      'blank',
      'invalid_json',
      'not_object',
      'not_object',
      'not_object',
      'not_object',
      'invalid_json',
      'invalid_json',
    ]);
  });

  it('reads a complete last line without a newline, and keeps unknown fields', async () => {
    const record = { v: 1, run_id: 'r', added_later: { nested: [1, 'two'] }, another: null };
    const { ours, theirs } = await both(`{"n":1}\n${JSON.stringify(record)}`);
    expect(ours).toEqual(theirs);
    expect(ours.records).toEqual([{ n: 1 }, record]);
  });

  it('joins lines across 1 MiB reads, multi-byte characters included', async () => {
    const long = `{"text":"${'é€'.repeat(400_000)}"}`; // ~2 MB of UTF-8, straddling two reads
    const lines = Array.from({ length: 3000 }, (_, i) => `{"i":${i},"s":"${'ü😀'.repeat(i % 700)}"}`);
    const { ours, theirs } = await both([lines.slice(0, 1500).join('\n'), long, lines.slice(1500).join('\n'), ''].join('\n'));
    expect(ours.records.length).toBe(3001);
    expect(ours).toEqual(theirs);
    expect((ours.records[1500] as { text: string }).text.length).toBe(800_000);
  });

  it('a callback that throws ends the read with its error', async () => {
    const file = join(dir, 'runs.jsonl');
    await writeFile(file, `{"pad":"${'p'.repeat(1000)}"}\n`.repeat(3 * 1024)); // 3 MiB: several reads
    let seen = 0;
    const failing = forEachJsonLine(
      file,
      () => {
        seen += 1;
        if (seen === 10) throw new Error('reader gave up');
      },
      () => {},
    );
    await expect(failing).rejects.toThrow('reader gave up');
    expect(seen).toBe(10);
  });

  it('reads a missing file as empty and rejects on a directory', async () => {
    expect(await read(join(dir, 'nope', 'runs.jsonl'))).toEqual({ records: [], skips: [] });
    await expect(read(dir)).rejects.toMatchObject({ code: 'EISDIR' });
  });
});
