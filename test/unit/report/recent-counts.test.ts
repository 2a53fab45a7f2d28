import { describe, expect, it } from 'vitest';

import { RecentCounts } from '../../../src/report/recent-counts.js';
import { prng } from '../../helpers/seeded-random.js';

/** The reference: two Maps swapped per generation, as the summary first kept its tasks. */
class MapRecentCounts {
  readonly #half: number;
  #young = new Map<string, number>();
  #old = new Map<string, number>();

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
  }

  increment(key: string): void {
    const young = this.#young.get(key);
    if (young !== undefined) {
      this.#young.set(key, young + 1);
      return;
    }
    const old = this.#old.get(key);
    if (old !== undefined) this.#old.delete(key);
    if (this.#young.size >= this.#half) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(key, (old ?? 0) + 1);
  }

  take(key: string): number {
    const count = this.#young.get(key) ?? this.#old.get(key) ?? 0;
    this.#young.delete(key);
    this.#old.delete(key);
    return count;
  }
}

describe('RecentCounts', () => {
  it.each([1, 2, 3, 7, 64, 1000])('answers every take as two swapped Maps would (limit %i)', (limit) => {
    const random = prng(limit);
    const ours = new RecentCounts(limit);
    const reference = new MapRecentCounts(limit);
    // Keys drawn from a pool a few times the limit: some stay, some are forgotten, some come back.
    const pool = Math.max(4, limit * 3);
    for (let i = 0; i < 200_000; i++) {
      const key = `task-${Math.floor(random() * random() * pool)}`;
      if (random() < 0.15) expect(ours.take(key), `op ${i}`).toBe(reference.take(key));
      else {
        ours.increment(key);
        reference.increment(key);
      }
    }
    for (let k = 0; k < pool; k++) expect(ours.take(`task-${k}`)).toBe(reference.take(`task-${k}`));
  });

  it('answers as the Maps do with long and non-ASCII keys, whose characters outgrow the first store', () => {
    const random = prng(9);
    const ours = new RecentCounts(100);
    const reference = new MapRecentCounts(100);
    const long = (n: number): string => `${'é😀x'.repeat(n % 97)}-${n}`;
    for (let i = 0; i < 50_000; i++) {
      const key = long(Math.floor(random() * random() * 600));
      if (random() < 0.15) expect(ours.take(key), `op ${i}`).toBe(reference.take(key));
      else {
        ours.increment(key);
        reference.increment(key);
      }
    }
    for (let k = 0; k < 600; k++) expect(ours.take(long(k))).toBe(reference.take(long(k)));
  });

  it('forgets the oldest keys past its limit and keeps the recent ones', () => {
    const counts = new RecentCounts(4); // two generations of 2
    for (const key of ['a', 'a', 'b', 'c', 'd', 'e']) counts.increment(key);
    expect(counts.take('a')).toBe(0); // dropped with its generation
    expect(counts.take('d')).toBe(1);
    expect(counts.take('d')).toBe(0); // taken
    expect(counts.take('e')).toBe(1);
  });
});
