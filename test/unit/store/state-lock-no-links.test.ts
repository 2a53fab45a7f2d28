import { readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StateLock } from '../../../src/store/state/state-lock.js';
import { tempDir } from '../../helpers/temp-dir.js';

const tried = vi.hoisted(() => ({ links: 0 }));

// A file system without hard links (FAT, some network and FUSE mounts): `link` fails with EPERM.
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  const link = async () => {
    tried.links += 1;
    throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
  };
  return { ...actual, default: { ...actual, link }, link };
});

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

describe('the state lock where the file system has no hard links', () => {
  it('creates the lock in place, with its holder, and leaves no temp file behind', async () => {
    dir = tempDir('state-lock-nolink-');
    const file = path.join(dir, 'state.json');
    const lock = new StateLock(`${file}.lock`, { guards: file, staleMs: 10_000, maxWaitMs: 15_000, warn: () => {} });
    const release = await lock.acquire();
    expect(JSON.parse(readFileSync(`${file}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    await release();
    expect(readdirSync(dir)).toEqual([]);
    await (
      await lock.acquire()
    )(); // it does not try to link again
    expect(tried.links).toBe(1);
  });
});
