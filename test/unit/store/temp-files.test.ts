import { existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ABANDONED_TEMP_AGE_MS, isAbandonedTemp, removeAbandonedTemps } from '../../../src/store/temp-files.js';
import { tempDir } from '../../helpers/temp-dir.js';

const NOW = Date.UTC(2026, 10, 1);
const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

let dir = '';
afterEach(() => void (dir && rmSync(dir, { recursive: true, force: true })));

/** A file in `dir`, last written `ageMs` before NOW. */
function file(name: string, ageMs: number): string {
  const target = path.join(dir, name);
  writeFileSync(target, '');
  utimesSync(target, (NOW - ageMs) / 1000, (NOW - ageMs) / 1000);
  return target;
}

describe('temp files left by a process killed mid-write', () => {
  it('are abandoned once a minute old, or dated a minute ahead (the clock stepped back)', () => {
    expect(isAbandonedTemp(NOW - ABANDONED_TEMP_AGE_MS, NOW)).toBe(true);
    expect(isAbandonedTemp(NOW + ABANDONED_TEMP_AGE_MS, NOW)).toBe(true);
    expect(isAbandonedTemp(NOW - 1_000, NOW)).toBe(false);
  });

  it('are removed; a temp file being written, and every other file, are kept', async () => {
    dir = tempDir('temp-files-');
    mkdirSync(dir, { recursive: true });
    const left = file(`.state.json.${UUID}.tmp`, 2 * ABANDONED_TEMP_AGE_MS);
    const lockClaim = file(`.state.json.lock.${UUID}.tmp`, 2 * ABANDONED_TEMP_AGE_MS);
    const writing = file(`.state.json.${UUID.replace('0f', '1f')}.tmp`, 100);
    const other = file(`.runs.jsonl.${UUID}.tmp`, 2 * ABANDONED_TEMP_AGE_MS);
    const notTemp = file('state.json', 2 * ABANDONED_TEMP_AGE_MS);
    const removed = await removeAbandonedTemps(dir, 'state.json', NOW);
    expect(removed.sort()).toEqual([path.basename(left), path.basename(lockClaim)].sort());
    expect([left, lockClaim].map(existsSync)).toEqual([false, false]);
    expect([writing, other, notTemp].map(existsSync)).toEqual([true, true, true]);
    expect(await removeAbandonedTemps(dir, undefined, NOW)).toEqual([path.basename(other)]);
    expect(await removeAbandonedTemps(path.join(dir, 'missing'), undefined, NOW)).toEqual([]);
  });
});
