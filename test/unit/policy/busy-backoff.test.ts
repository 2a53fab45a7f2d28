import { describe, expect, it } from 'vitest';
import { BUSY_BACKOFF, BUSY_STATUSES, busyBackoffMs, decideBusyRetry } from '../../../src/policy/busy-backoff.js';
import { MIN_ATTEMPT_MS } from '../../../src/policy/fallback.js';
import { prng } from '../../helpers/seeded-random.js';

describe('busy backoff schedule', () => {
  it('doubles from 250 ms up to the 4 s cap, drawn uniformly below that ceiling (full jitter)', () => {
    const almostOne = () => 0.999_999_9;
    expect([1, 2, 3, 4, 5, 6, 8].map((retry) => busyBackoffMs(retry, almostOne))).toEqual([
      249, 499, 999, 1_999, 3_999, 3_999, 3_999,
    ]);
    expect(busyBackoffMs(3, () => 0)).toBe(0);
    expect(busyBackoffMs(3, () => 0.5)).toBe(500);
  });

  it('stays in [0, ceiling) for any draw', () => {
    const random = prng(12);
    for (let i = 0; i < 2_000; i += 1) {
      const retry = 1 + (i % 8);
      const wait = busyBackoffMs(retry, random);
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThan(Math.min(BUSY_BACKOFF.capMs, BUSY_BACKOFF.baseMs * 2 ** (retry - 1)));
    }
  });

  it('spreads callers turned away at the same moment', () => {
    const random = prng(7);
    const waits = new Set(Array.from({ length: 20 }, () => busyBackoffMs(3, random)));
    expect(waits.size).toBeGreaterThan(15);
  });
});

describe('busy retry decision', () => {
  const base = { status: 'server_busy' as const, retriesDone: 0, maxRetries: 3, now: 0, budgetEndsAt: 60_000, random: () => 0.5 };

  it('retries server_busy while retries are left, with the schedule wait', () => {
    expect(decideBusyRetry(base)).toEqual({ retry: true, waitMs: 125 });
    expect(decideBusyRetry({ ...base, retriesDone: 2 })).toEqual({ retry: true, waitMs: 500 });
    expect(decideBusyRetry({ ...base, retriesDone: 3 })).toEqual({ retry: false });
    expect(decideBusyRetry({ ...base, maxRetries: 0 })).toEqual({ retry: false });
  });

  it('retries a 429 usage limit and a machine that could not start the CLI like a busy server, and no other status', () => {
    expect(BUSY_STATUSES.has('rate_limited')).toBe(true);
    expect(decideBusyRetry({ ...base, status: 'rate_limited' })).toEqual({ retry: true, waitMs: 125 });
    expect(decideBusyRetry({ ...base, status: 'spawn_failed' })).toEqual({ retry: true, waitMs: 125 });
    for (const status of ['crashed', 'ok', 'timeout', 'ollama_unreachable', 'pull_failed', 'cli_not_found'] as const) {
      expect(decideBusyRetry({ ...base, status })).toEqual({ retry: false });
    }
  });

  it('waits only when the wait leaves time for another try within the budget', () => {
    expect(decideBusyRetry({ ...base, budgetEndsAt: 125 + MIN_ATTEMPT_MS })).toEqual({ retry: true, waitMs: 125 });
    expect(decideBusyRetry({ ...base, budgetEndsAt: 125 + MIN_ATTEMPT_MS - 1 })).toEqual({ retry: false });
  });
});
