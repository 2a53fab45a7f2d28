import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readTextIfAny, writeFileAtomic } from '../../../src/store/durable-fs.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir = '';
beforeEach(() => {
  dir = tempDir('durable-fs-');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('replaces the file whole, owner-only, and leaves no temp file', async () => {
    const file = path.join(dir, 'state.json');
    writeFileSync(file, 'old', { mode: 0o644 });
    await writeFileAtomic(file, '{"n":1}');
    expect(readFileSync(file, 'utf8')).toBe('{"n":1}');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('concurrent writers each use their own temp file: every read sees one whole version', async () => {
    const file = path.join(dir, 'state.json');
    const versions = Array.from({ length: 40 }, (_, i) => JSON.stringify({ writer: i, pad: 'x'.repeat(20_000) }));
    const reads: string[] = [];
    await Promise.all([
      ...versions.map((text) => writeFileAtomic(file, text)),
      ...versions.map(async () => {
        const text = await readTextIfAny(file);
        if (text !== null) reads.push(text);
      }),
    ]);
    for (const text of reads) expect(versions).toContain(text);
    expect(versions).toContain(readFileSync(file, 'utf8'));
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('removes its temp file when the rename fails', async () => {
    const target = path.join(dir, 'a-dir');
    mkdirSync(path.join(target, 'inside'), { recursive: true });
    await expect(writeFileAtomic(target, 'x')).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['a-dir']);
  });
});

describe('readTextIfAny', () => {
  it('reads a missing file as null', async () => {
    expect(await readTextIfAny(path.join(dir, 'none'))).toBeNull();
  });
});
