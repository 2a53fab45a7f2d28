import { describe, expect, it } from 'vitest';
import { HEALTHY, isDown, markDown, markUp } from '../../../src/policy/host-health.js';

describe('host health', () => {
  it('a host that cannot be reached is skipped 5 s, then 10, 20, 40, and at most 60 s', () => {
    let health = HEALTHY;
    const spans: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      health = markDown(health, 1_000, 'could not connect');
      spans.push(health.downUntil! - 1_000);
    }
    expect(spans).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000]);
    expect(health.lastError).toBe('could not connect');
  });

  it('is down until its time is up, then takes calls again (the next one probes it)', () => {
    const health = markDown(HEALTHY, 0, 'x');
    expect(isDown(health, 4_999)).toBe(true);
    expect(isDown(health, 5_000)).toBe(false);
  });

  it('a host that answers is up at once, and its backoff starts again from 5 s', () => {
    const health = markUp(markDown(markDown(HEALTHY, 0, 'x'), 0, 'x'));
    expect(health).toEqual(HEALTHY);
    expect(markDown(health, 0, 'y').downUntil).toBe(5_000);
  });
});
