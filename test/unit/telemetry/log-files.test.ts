import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  compareRunLogNames,
  listRunLogFiles,
  nextLogFileName,
  parseRunLogName,
  RUN_LOG_FILE_NAME,
  sortRunLogNames,
} from '../../../src/telemetry/log-files.js';
import { tempDir } from '../../helpers/temp-dir.js';

const at = (iso: string): Date => new Date(iso);

describe('nextLogFileName', () => {
  it('starts the dated files at 001 with the UTC date of the moment', () => {
    expect(nextLogFileName('runs.jsonl', at('2025-11-22T10:00:00Z'))).toBe('runs-2025-11-22-001.jsonl');
    // 23:30 in New York is already the next day in UTC.
    expect(nextLogFileName('runs.jsonl', at('2025-11-22T23:30:00-05:00'))).toBe('runs-2025-11-23-001.jsonl');
  });

  it('counts up within a date', () => {
    expect(nextLogFileName('runs-2025-11-22-001.jsonl', at('2025-11-22T10:00:00Z'))).toBe('runs-2025-11-22-002.jsonl');
    expect(nextLogFileName('runs-2025-11-22-041.jsonl', at('2025-11-22T23:59:59.999Z'))).toBe('runs-2025-11-22-042.jsonl');
  });

  it('restarts at 001 on a new date', () => {
    expect(nextLogFileName('runs-2025-11-22-041.jsonl', at('2025-11-23T00:00:00Z'))).toBe('runs-2025-11-23-001.jsonl');
    expect(nextLogFileName('runs-2025-12-31-007.jsonl', at('2026-01-01T00:00:01Z'))).toBe('runs-2026-01-01-001.jsonl');
  });

  it('keeps the date and counts up when the clock is behind the current file, so the next file still sorts after it', () => {
    const next = nextLogFileName('runs-2025-11-22-004.jsonl', at('2025-11-21T23:00:00Z'));
    expect(next).toBe('runs-2025-11-22-005.jsonl');
    expect(compareRunLogNames('runs-2025-11-22-004.jsonl', next)).toBeLessThan(0);
  });

  it('grows to 4 digits after 999', () => {
    const day = at('2025-11-22T12:00:00Z');
    expect(nextLogFileName('runs-2025-11-22-998.jsonl', day)).toBe('runs-2025-11-22-999.jsonl');
    expect(nextLogFileName('runs-2025-11-22-999.jsonl', day)).toBe('runs-2025-11-22-1000.jsonl');
    expect(nextLogFileName('runs-2025-11-22-1000.jsonl', day)).toBe('runs-2025-11-22-1001.jsonl');
  });

  it('keeps the directory when given a path', () => {
    expect(nextLogFileName('/var/t/runs-2025-11-22-007.jsonl', at('2025-11-22T10:00:00Z'))).toBe(
      '/var/t/runs-2025-11-22-008.jsonl',
    );
    expect(nextLogFileName('/var/t/runs.jsonl', at('2025-11-22T10:00:00Z'))).toBe('/var/t/runs-2025-11-22-001.jsonl');
  });

  it('gives the same name to every caller on the same date (processes crossing the limit together)', () => {
    const names = ['T00:00:00Z', 'T09:15:00.5Z', 'T23:59:59.999Z'].map((time) =>
      nextLogFileName('runs-2025-11-22-003.jsonl', at(`2025-11-22${time}`)),
    );
    expect(new Set(names)).toEqual(new Set(['runs-2025-11-22-004.jsonl']));
  });

  it('refuses a name that is not a run log file', () => {
    expect(() => nextLogFileName('other.jsonl', new Date())).toThrow(TypeError);
    expect(() => nextLogFileName('runs.jsonl.corrupt', new Date())).toThrow(/runs-YYYY-MM-DD-NNN/);
  });
});

describe('parseRunLogName', () => {
  it('parses the first file and canonical dated names', () => {
    for (const name of ['runs.jsonl', 'runs-2025-11-22-001.jsonl', 'runs-2024-02-29-999.jsonl', 'runs-2025-11-22-1000.jsonl']) {
      const parsed = parseRunLogName(name);
      expect(parsed).toBeDefined();
    }
    expect(parseRunLogName(RUN_LOG_FILE_NAME)).toEqual({ date: null, seq: 0 });
    expect(parseRunLogName('runs-2025-11-22-012.jsonl')).toEqual({ date: '2025-11-22', seq: 12 });
  });

  it('rejects everything else', () => {
    for (const name of [
      'runs.jsonl.corrupt',
      'other.jsonl',
      'runs-old.jsonl',
      'runs.jsonl.tmp',
      'runs-2025-11-22-01.jsonl', // too short
      'runs-2025-11-22-0001.jsonl', // not canonical: 1 is 001
      'runs-2025-11-22-000.jsonl', // sequence starts at 1
      'runs-2025-02-30-001.jsonl', // no such date
      'runs-2025-13-01-001.jsonl',
      'runs-2025-11-22-001.jsonl.gz',
      'xruns-2025-11-22-001.jsonl',
      'runs-2025-11-22-001.JSONL',
    ]) {
      expect(parseRunLogName(name), name).toBeUndefined();
    }
  });
});

describe('reading order', () => {
  it('puts runs.jsonl first, then dates, then sequence numbers as numbers (999 before 1000)', () => {
    const ordered = [
      'runs.jsonl',
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-002.jsonl',
      'runs-2025-11-22-010.jsonl',
      'runs-2025-11-22-999.jsonl',
      'runs-2025-11-22-1000.jsonl',
      'runs-2025-11-22-1001.jsonl',
      'runs-2025-11-23-001.jsonl',
      'runs-2026-01-01-001.jsonl',
    ];
    const shuffled = [...ordered].reverse();
    shuffled.push(shuffled.shift()!);
    expect(sortRunLogNames(shuffled)).toEqual(ordered);
    // A plain string sort gets 999/1000 wrong: this is why the order is not just `.sort()`.
    expect([...ordered].sort()).not.toEqual(ordered);
  });

  it('drops stray names', () => {
    expect(sortRunLogNames(['other.jsonl', 'runs-2025-11-22-002.jsonl', 'runs.jsonl.corrupt', 'runs.jsonl'])).toEqual([
      'runs.jsonl',
      'runs-2025-11-22-002.jsonl',
    ]);
  });
});

describe('listRunLogFiles', () => {
  let dir: string;
  beforeEach(async () => {
    dir = tempDir('log-files-');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives [] for a missing or empty directory', async () => {
    expect(await listRunLogFiles(join(dir, 'missing'))).toEqual([]);
    expect(await listRunLogFiles(dir)).toEqual([]);
  });

  it('lists the run log files in reading order as absolute paths, ignoring stray files and directories', async () => {
    const logs = [
      'runs.jsonl',
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-999.jsonl',
      'runs-2025-11-22-1000.jsonl',
      'runs-2025-11-23-001.jsonl',
    ];
    const strays = [
      'runs.jsonl.corrupt',
      'other.jsonl',
      'runs-old.jsonl',
      'runs-2025-11-22-01.jsonl',
      'state.json',
      'runs-2025-11-24-001.jsonl.tmp',
    ];
    for (const name of [...[...logs].reverse(), ...strays]) await writeFile(join(dir, name), '');
    await mkdir(join(dir, 'runs-2025-11-25-001.jsonl')); // a directory with a log's name
    await mkdir(join(dir, 'state.tasks'));

    const expected = logs.map((name) => join(dir, name));
    expect(await listRunLogFiles(dir)).toEqual(expected);
    expect(await listRunLogFiles(relative(process.cwd(), dir))).toEqual(expected);
  });

  it('works when runs.jsonl itself is gone', async () => {
    await writeFile(join(dir, 'runs-2025-11-22-002.jsonl'), '');
    await writeFile(join(dir, 'runs-2025-11-22-001.jsonl'), '');
    expect(await listRunLogFiles(dir)).toEqual([join(dir, 'runs-2025-11-22-001.jsonl'), join(dir, 'runs-2025-11-22-002.jsonl')]);
  });

  it('throws when the directory is a file', async () => {
    await writeFile(join(dir, 'file'), '');
    await expect(listRunLogFiles(join(dir, 'file'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
