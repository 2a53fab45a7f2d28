import { appendFile, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { JsonlAppender } from '../../../src/telemetry/jsonl-appender.js';
import { listRunLogFiles, nextLogFileName } from '../../../src/telemetry/log-files.js';
import { RunLog } from '../../../src/telemetry/run-log.js';
import { readAll } from '../../helpers/read-all.js';
import { sampleRecord } from '../../helpers/sample-record.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('rotation-');
});
const logs: RunLog[] = [];
/** A run log in the test's dir, whose retention is awaited before the dir goes. */
function openLog(options: ConstructorParameters<typeof RunLog>[1]): RunLog {
  const log = new RunLog(dir, options);
  logs.push(log);
  return log;
}
afterEach(async () => {
  await Promise.all(logs.splice(0).map((log) => log.idle()));
  await rm(dir, { recursive: true, force: true });
});

function failOnError(): (error: unknown) => void {
  return (error) => {
    throw new Error(`unexpected onError: ${String(error)}`);
  };
}

const DAY = '2025-11-22';
const fixedNow = (): Date => new Date(`${DAY}T10:00:00Z`);
const dated = (seq: number, date = DAY): string => `runs-${date}-${String(seq).padStart(3, '0')}.jsonl`;

/** Raw lines of a file, each with its byte length including `\n`; fails on a missing final `\n`. */
async function rawLines(file: string): Promise<{ text: string; bytes: number }[]> {
  const text = await readFile(file, 'utf8');
  expect(text.endsWith('\n'), `${file} ends with \\n`).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => ({ text: line, bytes: Buffer.byteLength(line) + 1 }));
}

/** An appender over `dir`'s run log, the way RunLog builds it, with the knobs RunLog hides. */
function rotatingAppender(maxBytes: number, now = fixedNow): JsonlAppender {
  return new JsonlAppender(join(dir, 'runs.jsonl'), {
    onError: failOnError(),
    rotation: { maxBytes, now, files: { list: () => listRunLogFiles(dir), next: nextLogFileName } },
  });
}

describe('RunLog rotation in one process', () => {
  it('moves on to a new file at the limit: every line whole, none split, the count exact, call order kept', async () => {
    const limit = 2048;
    const log = openLog({ maxBytes: limit, now: fixedNow, onError: failOnError() });
    const count = 300;
    // Fired without awaiting, mixed sizes: the queue must keep order across file switches too.
    await Promise.all(
      Array.from({ length: count }, (_, seq) =>
        log.record(sampleRecord({ run_id: `r-${seq}`, error: 'e'.repeat((seq * 37) % 500) })),
      ),
    );

    const files = await listRunLogFiles(log.dir);
    expect(files.map((f) => basename(f))).toEqual([
      'runs.jsonl',
      ...Array.from({ length: files.length - 1 }, (_, i) => dated(i + 1)),
    ]);
    expect(files.length).toBeGreaterThan(20);

    const perFile = await Promise.all(files.map(rawLines));
    const ids: unknown[] = [];
    for (const [i, lines] of perFile.entries()) {
      const size = lines.reduce((sum, l) => sum + l.bytes, 0);
      // One process alone never passes the limit...
      expect(size).toBeLessThanOrEqual(limit);
      expect((await stat(files[i]!)).size).toBe(size);
      expect((await stat(files[i]!)).mode & 0o777).toBe(0o600);
      // ...and moves on only when the next line really did not fit.
      const next = perFile[i + 1]?.[0];
      if (next !== undefined) expect(size + next.bytes).toBeGreaterThan(limit);
      for (const line of lines) ids.push((JSON.parse(line.text) as { run_id: string }).run_id);
    }
    expect(ids).toEqual(Array.from({ length: count }, (_, seq) => `r-${seq}`));
  });

  it('puts a line bigger than the limit alone into a file, and goes on with the next file', async () => {
    const log = openLog({ maxBytes: 2048, now: fixedNow, onError: failOnError() }); // ~600-byte records
    await log.record(sampleRecord({ run_id: 'small-1' }));
    await log.record(sampleRecord({ run_id: 'big-1', error: 'x'.repeat(3000) }));
    await log.record(sampleRecord({ run_id: 'big-2', error: 'y'.repeat(2000) }));
    await log.record(sampleRecord({ run_id: 'small-2' }));
    await log.record(sampleRecord({ run_id: 'small-3' }));

    const byFile = await Promise.all(
      (await listRunLogFiles(log.dir)).map(async (f) => [basename(f), (await readAll(f)).records.map((r) => r.run_id)]),
    );
    expect(byFile).toEqual([
      ['runs.jsonl', ['small-1']],
      [dated(1), ['big-1']],
      [dated(2), ['big-2']],
      [dated(3), ['small-2', 'small-3']],
    ]);
  });

  it('writes a first line bigger than the limit into the empty runs.jsonl (no loop, no empty file)', async () => {
    const log = openLog({ maxBytes: 1024, now: fixedNow, onError: failOnError() });
    await log.record(sampleRecord({ run_id: 'big', error: 'x'.repeat(5000) }));
    await log.record(sampleRecord({ run_id: 'small' }));
    const files = await listRunLogFiles(log.dir);
    expect(files.map((f) => basename(f))).toEqual(['runs.jsonl', dated(1)]);
    expect((await readAll(files[0]!)).records.map((r) => r.run_id)).toEqual(['big']);
  });

  it('dates new files with the UTC date of the moment and restarts the sequence on a new date', async () => {
    let now = new Date('2025-11-22T23:59:58Z');
    const log = openLog({ maxBytes: 1024, now: () => now, onError: failOnError() });
    const big = (id: string): ReturnType<typeof sampleRecord> => sampleRecord({ run_id: id, error: 'x'.repeat(700) });
    await log.record(big('a')); // runs.jsonl
    await log.record(big('b')); // -001
    await log.record(big('c')); // -002
    now = new Date('2025-11-23T00:00:01Z');
    await log.record(big('d')); // 23rd -001
    await log.record(big('e')); // 23rd -002
    expect((await listRunLogFiles(log.dir)).map((f) => basename(f))).toEqual([
      'runs.jsonl',
      dated(1, '2025-11-22'),
      dated(2, '2025-11-22'),
      dated(1, '2025-11-23'),
      dated(2, '2025-11-23'),
    ]);
  });

  it('ends a torn last line before leaving a full file, so the files concatenate cleanly', async () => {
    const log = openLog({ maxBytes: 1024, now: fixedNow, onError: failOnError() });
    await log.record(sampleRecord({ run_id: 'before' }));
    // A writer killed mid-write, leaving the file full and its last line torn.
    await appendFile(log.path, `{"v":1,"pad":"${'z'.repeat(600)}`);
    await log.record(sampleRecord({ run_id: 'after' }));

    const files = await listRunLogFiles(log.dir);
    expect(files.map((f) => basename(f))).toEqual(['runs.jsonl', dated(1)]);
    expect((await readFile(files[0]!, 'utf8')).endsWith('z\n')).toBe(true);
    const all = (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('');
    await writeFile(join(dir, 'concatenated.txt'), all);
    const { records, summary } = await readAll(join(dir, 'concatenated.txt'));
    expect(records.map((r) => r.run_id)).toEqual(['before', 'after']);
    expect(summary).toEqual({ records: 2, invalid: 1, blank: 0 });
  });

  it('defaults to 50 MiB, and rejects a limit below 1', async () => {
    const log = openLog({ onError: failOnError() });
    for (let i = 0; i < 50; i += 1) await log.record(sampleRecord({ error: 'x'.repeat(400) }));
    expect(await listRunLogFiles(log.dir)).toEqual([join(dir, 'runs.jsonl')]);
    expect(() => new RunLog(dir, { maxBytes: 0 })).toThrow(RangeError);
    expect(() => new RunLog(dir, { maxBytes: Number.NaN })).toThrow(/maxBytes/);
  });
});

describe('rotation with several writers on one log', () => {
  // Two appenders on one directory behave like two processes: each has its own queue.

  it('joins the new file another writer started instead of starting its own', async () => {
    const a = rotatingAppender(1000);
    const b = rotatingAppender(1000);
    const line = (who: string, n: number): object => ({ who, n, pad: 'p'.repeat(280) }); // ~300 bytes
    await a.append(line('a', 0)); // a caches runs.jsonl
    await b.append(line('b', 0));
    await b.append(line('b', 1)); // runs.jsonl now ~900 bytes: full for any such line
    await b.append(line('b', 2)); // b moves on to -001
    await a.append(line('a', 1)); // a finds its cached file full, lists, and joins -001

    const files = await listRunLogFiles(dir);
    expect(files.map((f) => basename(f))).toEqual(['runs.jsonl', dated(1)]);
    const inSecond = (await readAll(files[1]!)).records.map((r) => `${String(r.who)}${String(r.n)}`);
    expect(inSecond).toEqual(['b2', 'a1']);
    expect(a.activeFile).toBe(files[1]);
  });

  it('follows another writer to its new file at the next append, even while its own file still has room', async () => {
    const a = rotatingAppender(1000);
    const other = rotatingAppender(1000);
    await a.append({ who: 'a', pad: 'p'.repeat(100) });
    await other.append({ who: 'other', pad: 'p'.repeat(300) });
    // A line that does not fit what is left of runs.jsonl (~450 bytes used): other moves on.
    await other.append({ who: 'other-big', pad: 'p'.repeat(600) });
    // This one would fit in runs.jsonl, but goes where the log now ends.
    await a.append({ who: 'a-2' });

    const files = await listRunLogFiles(dir);
    expect(files.map((f) => basename(f))).toEqual(['runs.jsonl', dated(1)]);
    const who = async (f: string): Promise<unknown[]> => (await readAll(f)).records.map((r) => r.who);
    expect(await who(files[0]!)).toEqual(['a', 'other']);
    expect(await who(files[1]!)).toEqual(['other-big', 'a-2']);
  });

  it('never moves a writer back to an earlier file, keeping its lines in order', async () => {
    const a = rotatingAppender(600);
    const b = rotatingAppender(600);
    const seqs: Record<string, number[]> = { a: [], b: [] };
    await Promise.all(
      Array.from({ length: 120 }, (_, n) => {
        const who = n % 3 === 0 ? 'b' : 'a';
        seqs[who]!.push(n);
        return (who === 'a' ? a : b).append({ who, n, pad: 'q'.repeat((n * 29) % 250) });
      }),
    );
    const files = await listRunLogFiles(dir);
    const seen: Record<string, number[]> = { a: [], b: [] };
    for (const file of files) for (const r of (await readAll(file)).records) seen[r.who as string]!.push(r.n as number);
    expect(seen).toEqual(seqs);
  });

  it('reports a file it cannot create to onError and resolves', async () => {
    const errors: unknown[] = [];
    const where: string[] = [];
    const appender = new JsonlAppender(join(dir, 'runs.jsonl'), {
      onError: (e, file) => {
        errors.push(e);
        where.push(file);
      },
      rotation: { maxBytes: 1024, now: fixedNow, files: { list: () => listRunLogFiles(dir), next: nextLogFileName } },
    });
    await appender.append({ pad: 'x'.repeat(900) });
    await mkdir(join(dir, dated(1))); // a directory where the next file goes
    await expect(appender.append({ pad: 'y'.repeat(900) })).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('EISDIR');
    expect(where).toEqual([join(dir, dated(1))]); // onError names the file it could not write
    // Not stuck: a line that still fits goes on into runs.jsonl.
    await appender.append({ small: true });
    expect((await readAll(join(dir, 'runs.jsonl'))).records.map((r) => Object.keys(r))).toEqual([['pad'], ['small']]);
  });
});
