import { describe, expect, it } from 'vitest';
import { planAnswerRetention, type AnswerFileFacts } from '../../../../src/app/reply/answer-retention.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 20);
const LIMITS = { graceMs: HOUR, maxFiles: 3, maxBytes: 1000, maxAgeMs: 7 * DAY };

/** Files named by their age in minutes at NOW, 10 bytes each unless said. */
const files = (...ages: number[]): AnswerFileFacts[] =>
  ages.map((age) => ({ name: `m${age}.txt`, mtimeMs: NOW - age * MIN, size: 10 }));

describe('planAnswerRetention: which answer files a prune deletes', () => {
  it('never a file within its grace, however many there are; they count for nothing', () => {
    const young = files(...Array.from({ length: 120 }, (_, i) => i % 60));
    expect(planAnswerRetention(young, { now: NOW, asOf: NOW }, LIMITS)).toEqual({ remove: [], redate: [] });
    const plan = planAnswerRetention([...young, ...files(61, 62, 63, 64, 65)], { now: NOW, asOf: NOW }, LIMITS);
    expect(plan.remove).toEqual(['m64.txt', 'm65.txt']); // past their grace: the newest 3 kept
  });

  it('past their grace: no more than maxBytes, and nothing older than maxAgeMs', () => {
    const big = [
      { name: 'a.txt', mtimeMs: NOW - 2 * HOUR, size: 600 },
      { name: 'b.txt', mtimeMs: NOW - 3 * HOUR, size: 600 },
      { name: 'c.txt', mtimeMs: NOW - 8 * DAY, size: 1 },
    ];
    expect(planAnswerRetention(big, { now: NOW, asOf: NOW }, LIMITS).remove).toEqual(['b.txt', 'c.txt']);
  });

  it('a pinned file (its reply is still being built) is kept whatever its age', () => {
    const plan = planAnswerRetention(
      files(2 * 24 * 60, 3 * 24 * 60),
      { now: NOW, asOf: NOW },
      { ...LIMITS, maxFiles: 0 },
      new Set(['m2880.txt']),
    );
    expect(plan.remove).toEqual(['m4320.txt']);
  });

  it('judges grace and age by the retention clock: a wall clock 100 days ahead ends no grace and ages nothing', () => {
    const stepped = { now: NOW + 100 * DAY, asOf: NOW + 30 * MIN };
    expect(planAnswerRetention(files(0, 10, 6 * 24 * 60), stepped, { ...LIMITS, maxFiles: 0 }).remove).toEqual(['m8640.txt']);
  });

  it('a file dated ahead of the wall clock (it stepped back) is dated now, not kept until the clock catches up', () => {
    const future = [{ name: 'ahead.txt', mtimeMs: NOW + 30 * DAY, size: 10 }];
    expect(planAnswerRetention(future, { now: NOW, asOf: NOW }, { ...LIMITS, maxFiles: 0 })).toEqual({
      remove: [],
      redate: ['ahead.txt'],
    });
  });
});
