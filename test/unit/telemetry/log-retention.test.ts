import { appendFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { forEachJsonLine } from '../../../src/telemetry/jsonl-reader.js';
import { isOlderThan, pruneRunLog } from '../../../src/telemetry/log-retention.js';
import { RETENTION_CLOCK_FILE_NAME, RetentionClockFile } from '../../../src/telemetry/retention-clock.js';
import { RunLog } from '../../../src/telemetry/run-log.js';
import { sampleRecord } from '../../helpers/sample-record.js';
import { tempDir } from '../../helpers/temp-dir.js';

const DAY = 86_400_000;
const NOW = new Date('2026-06-01T12:00:00.000Z');
const NO_SIZE_LIMIT = 0;

let dir: string;
beforeEach(async () => {
  dir = tempDir('log-retention-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A log file whose records end at `endMs` (their `ts`), last written then (its mtime). */
async function logFile(name: string, endMs: number, lines = 3, pad = 0): Promise<string> {
  const file = join(dir, name);
  const records = Array.from({ length: lines }, (_, i) =>
    JSON.stringify(
      sampleRecord({
        run_id: `${name}-${i}`,
        ts: new Date(endMs - (lines - 1 - i) * 1000).toISOString(),
        error: 'e'.repeat(pad),
      }),
    ),
  );
  await writeFile(file, `${records.join('\n')}\n`);
  await utimes(file, new Date(endMs), new Date(endMs));
  return file;
}

const daysAgo = (days: number): number => NOW.getTime() - days * DAY;
/** The log's files (retention's clock file beside them left out). */
const names = async (): Promise<string[]> => (await readdir(dir)).filter((name) => name.startsWith('runs')).sort();

describe('isOlderThan', () => {
  it('is true only when the last write and the last record both come before the time', async () => {
    const old = await logFile('runs-2026-01-01-001.jsonl', daysAgo(100));
    expect(await isOlderThan(old, daysAgo(99))).toBe(true);
    expect(await isOlderThan(old, daysAgo(101))).toBe(false);
    // Copied without keeping its time: the mtime is recent, so the file is read.
    await utimes(old, NOW, NOW);
    expect(await isOlderThan(old, daysAgo(99))).toBe(false);
  });

  it('trusts a recent last record over an old mtime (a file restored with an older time)', async () => {
    const file = await logFile('runs-2026-01-01-001.jsonl', daysAgo(1));
    await utimes(file, new Date(daysAgo(100)), new Date(daysAgo(100)));
    expect(await isOlderThan(file, daysAgo(2))).toBe(false);
  });

  it('reads the last record before a torn tail, and falls back on the mtime when the tail has none', async () => {
    const file = await logFile('runs-2026-01-01-001.jsonl', daysAgo(1));
    await appendFile(file, '{"v":2,"ts":"2099-'); // torn: skipped
    await utimes(file, new Date(daysAgo(100)), new Date(daysAgo(100)));
    expect(await isOlderThan(file, daysAgo(2))).toBe(false);
    expect(await isOlderThan(file, daysAgo(0.5))).toBe(true);

    const huge = join(dir, 'runs-2026-01-02-001.jsonl');
    await writeFile(huge, `${JSON.stringify({ ts: new Date(daysAgo(1)).toISOString(), pad: 'p'.repeat(200_000) })}\n`);
    await utimes(huge, new Date(daysAgo(100)), new Date(daysAgo(100)));
    expect(await isOlderThan(huge, daysAgo(2))).toBe(true); // the tail holds no whole line: the mtime decides
  });

  it('takes a missing file as older (it holds nothing)', async () => {
    expect(await isOlderThan(join(dir, 'runs-2026-01-01-001.jsonl'), 0)).toBe(true);
  });
});

describe('pruneRunLog', () => {
  it('deletes the rotated files past the age, oldest first, never the two newest', async () => {
    await logFile('runs.jsonl', daysAgo(200));
    await logFile('runs-2025-11-14-001.jsonl', daysAgo(150));
    await logFile('runs-2026-02-01-001.jsonl', daysAgo(89));
    await logFile('runs-2026-03-01-001.jsonl', daysAgo(95)); // out of order in time: its own age counts
    await logFile('runs-2026-05-01-001.jsonl', daysAgo(300)); // old, but one of the two newest
    await logFile('runs-2026-05-31-001.jsonl', daysAgo(1));
    const result = await pruneRunLog(dir, { maxAgeMs: 90 * DAY, maxTotalBytes: NO_SIZE_LIMIT }, NOW);
    expect(result.deleted.map((f) => basename(f))).toEqual([
      'runs.jsonl',
      'runs-2025-11-14-001.jsonl',
      'runs-2026-03-01-001.jsonl',
    ]);
    expect(result.failed).toEqual([]);
    expect(await names()).toEqual(['runs-2026-02-01-001.jsonl', 'runs-2026-05-01-001.jsonl', 'runs-2026-05-31-001.jsonl']);
  });

  it('deletes the oldest files while the log is over its size, and keeps what fits', async () => {
    const files: string[] = [];
    for (let i = 1; i <= 6; i++) files.push(await logFile(`runs-2026-05-2${i}-001.jsonl`, daysAgo(10 - i), 10, 1000));
    const size = (await stat(files[0]!)).size; // the files are the same size, give or take a byte
    const result = await pruneRunLog(dir, { maxAgeMs: 0, maxTotalBytes: Math.round(3.5 * size) }, NOW);
    expect(result.deleted.map((f) => basename(f))).toEqual([
      'runs-2026-05-21-001.jsonl',
      'runs-2026-05-22-001.jsonl',
      'runs-2026-05-23-001.jsonl',
    ]);
    expect((await names()).length).toBe(3);
  });

  it('never deletes a file written within the last minute, however big the log', async () => {
    for (let i = 1; i <= 4; i++) await logFile(`runs-2026-05-2${i}-001.jsonl`, NOW.getTime() - 30_000, 10, 1000);
    const result = await pruneRunLog(dir, { maxAgeMs: 1, maxTotalBytes: 1 }, NOW);
    expect(result.deleted).toEqual([]);
    expect((await names()).length).toBe(4);
  });

  it('keeps everything with both bounds off, and copes with no file at all', async () => {
    await logFile('runs.jsonl', daysAgo(1000));
    for (let i = 1; i <= 3; i++) await logFile(`runs-2026-05-2${i}-001.jsonl`, daysAgo(900));
    expect((await pruneRunLog(dir, { maxAgeMs: 0, maxTotalBytes: 0 }, NOW)).deleted).toEqual([]);
    expect(await pruneRunLog(join(dir, 'missing'), { maxAgeMs: 1, maxTotalBytes: 1 }, NOW)).toEqual({ deleted: [], failed: [] });
  });

  it('leaves a reader that has a deleted file open reading it to the end', async () => {
    const reading = await logFile('runs.jsonl', daysAgo(200), 3000, 500); // ~1.7 MB: several reads
    await logFile('runs-2026-05-30-001.jsonl', daysAgo(2));
    await logFile('runs-2026-05-31-001.jsonl', daysAgo(1));
    let pruned: Promise<unknown> | undefined;
    let records = 0;
    await forEachJsonLine(
      reading,
      () => {
        records += 1;
        pruned ??= pruneRunLog(dir, { maxAgeMs: 90 * DAY, maxTotalBytes: 0 }, NOW); // deleted under the reader's feet
      },
      () => expect.fail('no line is torn'),
    );
    expect((await pruned) as { deleted: string[] }).toEqual({ deleted: [reading], failed: [] });
    expect(records).toBe(3000);
  });
});

describe('RunLog retention', () => {
  it('prunes when the process writes its first record, and idle() waits for it', async () => {
    await logFile('runs.jsonl', Date.now() - 200 * DAY);
    await logFile('runs-2025-01-01-001.jsonl', Date.now() - 150 * DAY);
    await logFile('runs-2025-02-01-001.jsonl', Date.now() - 100 * DAY);
    await logFile('runs-2025-03-01-001.jsonl', Date.now() - 10 * DAY); // the active file
    const log = new RunLog(dir, { onError: (e) => expect.fail(String(e)) });
    await log.record(sampleRecord({ run_id: 'new' }));
    await log.idle();
    // The 90-day default: the two oldest go; the one before the active file stays, whatever its age.
    expect(await names()).toEqual(['runs-2025-02-01-001.jsonl', 'runs-2025-03-01-001.jsonl']);
    // The clock ages were judged by is kept for the next process.
    expect((await new RetentionClockFile(join(dir, RETENTION_CLOCK_FILE_NAME)).read())?.asOf).toBeCloseTo(Date.now(), -4);
  });

  it('prunes again each time it moves on to a new file, by the size bound it was given', async () => {
    await logFile('runs-2025-01-01-001.jsonl', Date.now() - 10 * DAY, 3, 1500);
    await logFile('runs-2025-01-02-001.jsonl', Date.now() - 9 * DAY, 3, 1500);
    const log = new RunLog(dir, {
      maxBytes: 2048,
      retention: { maxAgeMs: 0, maxTotalBytes: 5000 },
      onError: (e) => expect.fail(String(e)),
    });
    await log.record(sampleRecord({ run_id: 'first', error: 'x'.repeat(600) })); // does not fit the full 01-02: a new file
    await log.idle();
    expect(await names()).not.toContain('runs-2025-01-01-001.jsonl'); // over 5000 bytes: the oldest went
    expect(await names()).toContain('runs-2025-01-02-001.jsonl'); // still one of the two newest
    for (let i = 0; i < 8; i++) await log.record(sampleRecord({ run_id: `r-${i}`, error: 'x'.repeat(600) }));
    await log.idle();
    const left = await names();
    expect(left.filter((name) => name.startsWith('runs-2025-'))).toEqual([]);
    expect(left.length).toBeGreaterThanOrEqual(3); // the new files, written within the minute, all stay
  });
});

describe('RunLog retention across a step of the wall clock', () => {
  const HOUR = 3_600_000;
  /** A process's log whose wall clock reads `atMs`: it prunes when it writes its first record. */
  async function firstWrite(atMs: number): Promise<void> {
    const log = new RunLog(dir, { retentionNow: () => new Date(atMs), onError: (e) => expect.fail(String(e)) });
    await log.record(sampleRecord({ run_id: `at-${atMs}` }));
    await log.idle();
  }
  const rotated = ['runs.jsonl', 'runs-2026-05-20-001.jsonl', 'runs-2026-05-25-001.jsonl'];

  beforeEach(async () => {
    await logFile(rotated[0]!, daysAgo(12));
    await logFile(rotated[1]!, daysAgo(10));
    await logFile(rotated[2]!, daysAgo(5));
    await logFile('runs-2026-05-31-001.jsonl', daysAgo(1)); // the active file
  });

  it('a forward step of 100 days deletes nothing at the first write, and ages the log one day an hour from then', async () => {
    await firstWrite(NOW.getTime()); // a server yesterday: the clock is kept
    const stepped = NOW.getTime() + 100 * DAY;
    await firstWrite(stepped);
    expect(await names()).toEqual([...rotated, 'runs-2026-05-31-001.jsonl'].sort());
    // Another process an hour later judges one more day: 12-day-old records are still far from 90.
    await firstWrite(stepped + HOUR);
    expect(await names()).toHaveLength(4);
    // Delayed, not stopped: once the clock has caught up 78 days (78 hours on), the 12-day-old file goes.
    for (let hour = 2; hour <= 76; hour += 1) await firstWrite(stepped + hour * HOUR);
    expect(await names()).toContain('runs.jsonl');
    for (let hour = 77; hour <= 79; hour += 1) await firstWrite(stepped + hour * HOUR);
    expect(await names()).not.toContain('runs.jsonl');
  });

  it('a backward step does not stall retention: ages are judged by the stepped-back clock at once', async () => {
    // The clock ran 100 days ahead long enough for retention's clock to catch up; it is now set right.
    const ahead = NOW.getTime() + 100 * DAY;
    await writeFile(join(dir, RETENTION_CLOCK_FILE_NAME), JSON.stringify({ as_of: ahead, moved_at: ahead }));
    await firstWrite(NOW.getTime());
    expect(await names()).toHaveLength(4); // 12 days old by the right clock: kept
    const retention = { maxAgeMs: 11 * DAY, maxTotalBytes: 0 };
    const clock = new RetentionClockFile(join(dir, RETENTION_CLOCK_FILE_NAME));
    const { deleted } = await pruneRunLog(dir, retention, NOW, clock);
    expect(deleted.map((f) => basename(f))).toEqual(['runs.jsonl']);
  });
});
