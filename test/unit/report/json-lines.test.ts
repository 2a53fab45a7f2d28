import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { forEachJsonLine } from '../../../src/report/json-lines.js';
import { createRecordParser } from '../../../src/telemetry/fast-record-parser.js';
import { readJsonLines, type SkipReason } from '../../../src/telemetry/jsonl-reader.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-json-lines-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function both(content: string | Buffer) {
  const file = join(dir, 'runs.jsonl');
  await writeFile(file, content);
  const ours = { records: [] as unknown[], skips: [] as SkipReason[] };
  const counts = await forEachJsonLine(
    file,
    (r) => ours.records.push(r),
    (s) => ours.skips.push(s),
  );
  const theirs = { records: [] as unknown[], skips: [] as SkipReason[] };
  for await (const r of readJsonLines(file, { onSkip: (s) => theirs.skips.push(s.reason) })) theirs.records.push(r);
  return { ours, theirs, counts };
}

describe('forEachJsonLine', () => {
  it('skips exactly the lines readJsonLines skips, for the same reasons', async () => {
    const { ours, theirs, counts } = await both(
      [
        '{"n":1}',
        '',
        '   \t',
        'not json',
        '[1,2]',
        '"s"',
        '42',
        'null',
        '{"n":2}\r',
        '{"n":3,"ts":"2025-11-2',
        '{"n":4}',
        '{"n":5,"torn',
      ].join('\n'),
    );
    expect(ours).toEqual(theirs);
    expect(ours.records).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }]);
    expect(counts).toEqual({ records: 3, invalid: 7, blank: 2 });
  });

  it('reads a complete last line without a newline', async () => {
    const { ours, theirs } = await both('{"n":1}\n{"n":2}');
    expect(ours).toEqual(theirs);
    expect(ours.records).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('joins lines across 1 MiB reads, multi-byte characters included', async () => {
    const long = `{"text":"${'é€'.repeat(400_000)}"}`; // ~2 MB of UTF-8, straddling two reads
    const lines = Array.from({ length: 3000 }, (_, i) => `{"i":${i},"s":"${'ü'.repeat(i % 700)}"}`);
    const { ours, theirs } = await both([lines.slice(0, 1500).join('\n'), long, lines.slice(1500).join('\n'), ''].join('\n'));
    expect(ours.records.length).toBe(3001);
    expect(ours).toEqual(theirs);
    expect((ours.records[1500] as { text: string }).text.length).toBe(800_000);
  });

  it('gives a record parser the text around each line: the same records as JSON.parse, short, long (> 60 KiB) and split lines', async () => {
    const lines = Array.from({ length: 6000 }, (_, i) =>
      JSON.stringify({
        v: 2,
        ts: `2025-11-22T10:${String(i % 60).padStart(2, '0')}:00.000Z`,
        model: `model-number-${i % 7}`,
        i,
        error: i % 997 === 0 ? 'x'.repeat(70_000 + i) : null,
      }),
    );
    const file = join(dir, 'runs.jsonl');
    await writeFile(file, `${lines.join('\n')}\n{"torn":`);
    const parse = createRecordParser(['ts', 'model', 'i', 'error'] as const);
    const got: unknown[] = [];
    const skips: SkipReason[] = [];
    await forEachJsonLine(
      file,
      (r) => got.push({ ts: r.ts, model: r.model, i: r.i, error: r.error }),
      (s) => skips.push(s),
      parse,
    );
    expect(got).toEqual(
      lines.map((line) => {
        const { ts, model, i, error } = JSON.parse(line) as Record<string, unknown>;
        return { ts, model, i, error };
      }),
    );
    expect(skips).toEqual(['invalid_json']);
  });

  it('a callback that throws ends the read with its error, the next read in flight included', async () => {
    const file = join(dir, 'runs.jsonl');
    // 3 MiB: while the first read's lines are handed out, the second one is already reading.
    await writeFile(file, `{"pad":"${'p'.repeat(1000)}"}\n`.repeat(3 * 1024));
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
    expect(
      await forEachJsonLine(
        join(dir, 'nope.jsonl'),
        () => {},
        () => {},
      ),
    ).toEqual({ records: 0, invalid: 0, blank: 0 });
    await expect(
      forEachJsonLine(
        dir,
        () => {},
        () => {},
      ),
    ).rejects.toMatchObject({ code: 'EISDIR' });
  });
});
