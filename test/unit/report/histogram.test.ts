import { describe, expect, it } from 'vitest';

import { LogHistogram, roundMs } from '../../../src/report/histogram.js';
import { prng } from '../../helpers/seeded-random.js';

/** The exact nearest-rank quantile, as jq's `sort | .[ceil(n * q) - 1]` gives it. */
function exact(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length))) - 1]!;
}

const QUANTILES = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999];

function expectWithin(actual: number | null, expected: number, relative: number): void {
  expect(actual).not.toBeNull();
  expect(Math.abs(actual! - expected)).toBeLessThanOrEqual(relative * expected + 1e-9);
}

describe('LogHistogram', () => {
  it('is empty until a value arrives', () => {
    const h = new LogHistogram();
    expect([h.max, h.quantile(0), h.quantile(0.5), h.quantile(0.95)]).toEqual([null, null, null, null]);
  });

  it('has a fixed, small number of buckets', () => {
    expect(LogHistogram.BUCKETS).toBeGreaterThan(3000);
    expect(LogHistogram.BUCKETS).toBeLessThan(3300); // about 25 KB of counts per histogram
  });

  it('gives 1..10000 (shuffled) within 1% at every quantile; p50 and p95 exact to the documented bound', () => {
    const values = Array.from({ length: 10_000 }, (_, i) => i + 1);
    const random = prng(7);
    for (let i = values.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [values[i], values[j]] = [values[j]!, values[i]!];
    }
    const h = new LogHistogram();
    for (const v of values) h.add(v);
    const sorted = [...values].sort((a, b) => a - b);
    expect(exact(sorted, 0.5)).toBe(5000);
    expect(exact(sorted, 0.95)).toBe(9500);
    for (const q of QUANTILES) expectWithin(h.quantile(q), exact(sorted, q), 0.01);
    expect(h.max).toBe(10_000);
    expect(h.quantile(1)).toBe(10_000); // the top rank is the exact max
    expect(h.quantile(0)).toBe(1);
  });

  it('gives 200,000 log-normal durations within 1% (integers and fractions)', () => {
    for (const integers of [true, false]) {
      const random = prng(integers ? 1 : 2);
      const values: number[] = [];
      const h = new LogHistogram();
      for (let i = 0; i < 200_000; i++) {
        const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
        const raw = Math.exp(Math.log(3000) + 1.2 * normal);
        const v = integers ? Math.max(1, Math.round(raw)) : raw;
        values.push(v);
        h.add(v);
      }
      values.sort((a, b) => a - b);
      for (const q of QUANTILES) {
        expectWithin(h.quantile(q), exact(values, q), 0.01);
        expectWithin(roundMs(h.quantile(q)), exact(values, q), 0.01);
      }
    }
  });

  it('is exact for small whole numbers and for a constant', () => {
    const h = new LogHistogram();
    for (const v of [0, 0, 0, 0, 0, 2, 5]) h.add(v);
    expect(h.quantile(0.5)).toBe(0);
    expect(h.quantile(0.8)).toBe(2);
    expect(h.quantile(0.95)).toBe(5);
    const c = new LogHistogram();
    for (let i = 0; i < 1000; i++) c.add(4210);
    expect([c.quantile(0.5), c.quantile(0.95), c.max]).toEqual([4210, 4210, 4210]);
    const small = new LogHistogram();
    for (let v = 1; v <= 124; v++) small.add(v);
    for (const q of QUANTILES)
      expect(small.quantile(q)).toBe(
        exact(
          Array.from({ length: 124 }, (_, i) => i + 1),
          q,
        ),
      );
  });

  it('ignores negative and non-finite values; counts sub-0.01 values as (about) 0; clamps huge ones to the max', () => {
    const h = new LogHistogram();
    for (const v of [-1, Number.NaN, Infinity, -Infinity]) h.add(v);
    expect(h.max).toBeNull();
    h.add(0.001);
    h.add(0.002);
    h.add(5e12);
    expect(h.quantile(0)).toBe(0.001); // the exact minimum
    expect(h.quantile(0.5)).toBeLessThan(0.01);
    expect(h.quantile(1)).toBe(5e12);
  });
});

describe('roundMs', () => {
  it('keeps whole milliseconds from 100 up and hundredths below', () => {
    expect(roundMs(null)).toBeNull();
    expect(roundMs(4210.4)).toBe(4210);
    expect(roundMs(99.456)).toBe(99.46);
    expect(roundMs(0.004)).toBe(0);
  });
});
