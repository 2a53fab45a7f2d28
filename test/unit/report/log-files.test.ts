import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('report-log-files-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('listRunLogFiles', () => {
  it('resolves to [] for a missing directory', async () => {
    expect(await listRunLogFiles(join(dir, 'nope'))).toEqual([]);
    expect(await listRunLogFiles(join(dir, 'nope', 'deeper'))).toEqual([]);
  });

  it('lists runs.jsonl first, then the dated files by date and sequence, as absolute paths; nothing else', async () => {
    const names = [
      'runs-2025-11-22-002.jsonl',
      'runs-2025-11-22-010.jsonl',
      'runs-2025-11-21-001.jsonl',
      'runs.jsonl',
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-1000.jsonl', // past 999 the sequence grows a digit: after 999, not after 100
      'runs-2025-11-22-999.jsonl',
      'runs-2025-12-01-001.jsonl',
      // not run logs
      'runs-old.jsonl',
      'runs.jsonl.bak',
      'runs-2025-11-22-01.jsonl',
      'runs-2025-11-22-0001.jsonl',
      'runs-2025-11-22-000.jsonl',
      'runs-2025-02-30-001.jsonl',
      'state.json',
      'other.jsonl',
    ];
    for (const name of names) await writeFile(join(dir, name), '');
    await mkdir(join(dir, 'runs-2025-11-23-001.jsonl')); // a directory with a log's name
    const files = await listRunLogFiles(dir);
    expect(files.every((file) => isAbsolute(file) && file.startsWith(dir))).toBe(true);
    expect(files.map((file) => basename(file))).toEqual([
      'runs.jsonl',
      'runs-2025-11-21-001.jsonl',
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-002.jsonl',
      'runs-2025-11-22-010.jsonl',
      'runs-2025-11-22-999.jsonl',
      'runs-2025-11-22-1000.jsonl',
      'runs-2025-12-01-001.jsonl',
    ]);
  });

  it('reads the dated files alone when runs.jsonl is gone', async () => {
    await writeFile(join(dir, 'runs-2025-11-22-002.jsonl'), '');
    await writeFile(join(dir, 'runs-2025-11-22-001.jsonl'), '');
    expect((await listRunLogFiles(dir)).map((file) => basename(file))).toEqual([
      'runs-2025-11-22-001.jsonl',
      'runs-2025-11-22-002.jsonl',
    ]);
  });

  it('throws when the path is a file (a mistyped --dir), rather than report no runs', async () => {
    const file = join(dir, 'runs.jsonl');
    await writeFile(file, '');
    await expect(listRunLogFiles(file)).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
