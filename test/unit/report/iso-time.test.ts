import { describe, expect, it } from 'vitest';

import { parseIsoTime } from '../../../src/report/iso-time.js';
import { prng } from '../../helpers/seeded-random.js';

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * Tails of `:SS.sssZ` that are not seconds and milliseconds: `:59.999Z` with one character replaced
 * by one just outside the digits ('/' and ':'), another separator or a letter, and `:60.000Z`.
 */
const BENT_TAILS = [
  ':60.000Z',
  ...[...':59.999Z'].flatMap((_, i) =>
    ['/', ':', '.', 'x', 'Z', '0']
      .map((other) => `${':59.999Z'.slice(0, i)}${other}${':59.999Z'.slice(i + 1)}`)
      .filter((tail) => !/^:[0-5][0-9]\.[0-9]{3}Z$/.test(tail)),
  ),
];

describe('parseIsoTime', () => {
  it('gives what Date.parse gives for toISOString() times of any date', () => {
    const random = prng(7);
    for (let i = 0; i < 50_000; i++) {
      const text = new Date(Math.floor((random() * 2 - 0.2) * 253_402_300_799_999)).toISOString();
      expect(parseIsoTime(text), text).toBe(Date.parse(text));
    }
  });

  it('gives what Date.parse gives for out-of-range fields and other forms, NaN included', () => {
    const random = prng(8);
    const texts = [
      '2025-02-29T00:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
      '2025-04-31T00:00:00.000Z',
      '2025-13-01T00:00:00.000Z',
      '2025-00-10T00:00:00.000Z',
      '2025-01-00T00:00:00.000Z',
      '2025-01-01T24:00:00.000Z',
      '2025-01-01T23:60:00.000Z',
      '2025-01-01T23:59:60.000Z',
      '0050-01-01T00:00:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '2025-01-01T00:00:00.000z',
      '2025-01-01 00:00:00.000Z',
      '2025-01-01T00:00:00.000+01:00',
      '2025-01-01T00:00:00Z',
      '2025-01-01',
      '+002025-01-01T00:00:00.000Z',
      'not a time',
      '',
    ];
    for (let i = 0; i < 20_000; i++) {
      texts.push(
        `${pad(Math.floor(random() * 10_000), 4)}-${pad(Math.floor(random() * 14), 2)}-${pad(Math.floor(random() * 33), 2)}T` +
          `${pad(Math.floor(random() * 26), 2)}:${pad(Math.floor(random() * 62), 2)}:${pad(Math.floor(random() * 62), 2)}.${pad(Math.floor(random() * 1000), 3)}Z`,
      );
    }
    for (const text of texts) expect(Object.is(parseIsoTime(text), Date.parse(text)), text).toBe(true);
  });

  it('gives what Date.parse gives for runs of times in one minute (read from the remembered minute), bent tails included', () => {
    const random = prng(9);
    const texts: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const minute = new Date(Math.floor(random() * 253_402_300_000_000)).toISOString().slice(0, 16);
      for (let k = 0; k < 5; k++)
        texts.push(`${minute}:${pad(Math.floor(random() * 60), 2)}.${pad(Math.floor(random() * 1000), 3)}Z`);
      // The same minute with a tail that is not seconds and milliseconds, then a good one again.
      const bad = BENT_TAILS[Math.floor(random() * BENT_TAILS.length)]!;
      texts.push(`${minute}${bad}`, `${minute}:59.999Z`);
    }
    for (const text of texts) expect(Object.is(parseIsoTime(text), Date.parse(text)), text).toBe(true);
  });
});
