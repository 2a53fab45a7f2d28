import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { writeFileAtomicSync } from '../../../src/store/durable-fs.js';

let dir = '';
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('writeFileAtomicSync', () => {
  it('never gives a version the inode, size and mtime of an earlier one, even for same-size writes in one clock tick', () => {
    dir = mkdtempSync(path.join(tmpdir(), 'durable-fs-'));
    const file = path.join(dir, 'state.json');
    const seen = new Set<string>();
    let previous = -1n;
    for (let i = 0; i < 400; i++) {
      // Same size every time: only the mtime can tell these versions apart once ext4 reuses an inode.
      const written = writeFileAtomicSync(file, `{"n":${String(i % 10)}}`);
      const onDisk = statSync(file, { bigint: true });
      expect({ ino: onDisk.ino, size: onDisk.size, mtimeNs: onDisk.mtimeNs }).toEqual(written);
      expect(written.mtimeNs > previous, `write ${i}`).toBe(true);
      const identity = `${written.ino}/${written.size}/${written.mtimeNs}`;
      expect(seen.has(identity), `write ${i} repeats ${identity}`).toBe(false);
      seen.add(identity);
      previous = written.mtimeNs;
      if (i % 10 === 9) {
        // A version dated ahead of the clock (a coarse tick, another machine's clock, a hand edit):
        // the next version must still be dated after it, or it could take an older one's identity.
        const ahead = Date.now() / 1000 + 5;
        utimesSync(file, ahead, ahead);
        previous = statSync(file, { bigint: true }).mtimeNs;
      }
    }
    expect(readFileSync(file, 'utf8')).toBe('{"n":9}');
  });
});
