import { describe, expect, it } from 'vitest';
import { ELLIPSIS, shortenPaths } from '../../../src/report/short-paths.js';
import { prng } from '../../helpers/seeded-random.js';

/** A 100-character temp dir, like the one `npm test` must pass with. */
const TMP = `/tmp/${'t'.repeat(94)}`;

describe('shortenPaths: long paths shortened in the middle, never alike', () => {
  it('leaves paths that fit as they are', () => {
    expect(shortenPaths(['/var/a', '/var/b'], 40)).toEqual(['/var/a', '/var/b']);
  });

  it('keeps the first folder and the end that tells two long dirs apart', () => {
    const dirs = [`${TMP}/day-XYZ/alice`, `${TMP}/day-XYZ/bob`];
    const shown = shortenPaths(dirs, 60);
    expect(shown).toEqual([`/tmp/${ELLIPSIS}${dirs[0]!.slice(-54)}`, `/tmp/${ELLIPSIS}${dirs[1]!.slice(-54)}`]);
    expect(shown[0]).toMatch(/\/day-XYZ\/alice$/);
    expect(shown[1]).toMatch(/\/day-XYZ\/bob$/);
    expect(shown.every((p) => p.length === 60)).toBe(true);
  });

  it('moves the cut to where they differ when the ends are alike', () => {
    const a = `/home/${'h'.repeat(30)}/run-1/${'s'.repeat(80)}/telemetry`;
    const b = a.replace('run-1', 'run-2');
    const [x, y] = shortenPaths([a, b], 60);
    expect(x).not.toBe(y);
    expect(x!.length).toBeLessThanOrEqual(60);
    expect(x!.startsWith('/home/')).toBe(true);
    expect(x!.endsWith('/telemetry')).toBe(true);
  });

  it('leaves them whole when no cut can tell them apart', () => {
    const a = `/${'p'.repeat(100)}A${'s'.repeat(100)}`;
    const b = `/${'p'.repeat(100)}B${'s'.repeat(100)}`;
    expect(shortenPaths([a, b], 60)).toEqual([a, b]);
  });

  it('never prints two different paths alike, and never a shortened one over the room (random lists)', () => {
    const random = prng(25);
    const pick = (chars: string, n: number) =>
      Array.from({ length: n }, () => chars[Math.floor(random() * chars.length)]).join('');
    for (let round = 0; round < 500; round += 1) {
      const root = `/${pick('ab', 1 + Math.floor(random() * 60))}`;
      const paths = Array.from(
        { length: 2 + Math.floor(random() * 4) },
        () => `${root}/${pick('ab/', Math.floor(random() * 90))}/${pick('xy', Math.floor(random() * 8))}`,
      );
      const room = 20 + Math.floor(random() * 80);
      const shown = shortenPaths(paths, room);
      for (let i = 0; i < paths.length; i += 1) {
        if (shown[i] !== paths[i]) expect(shown[i]!.length, `${room}: ${paths[i]}`).toBeLessThanOrEqual(room);
        for (let j = 0; j < i; j += 1) {
          if (paths[i] !== paths[j]) expect(shown[i], `${paths[i]} / ${paths[j]}`).not.toBe(shown[j]);
        }
      }
    }
  });
});
