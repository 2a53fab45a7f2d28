import { describe, expect, it } from 'vitest';
import { CONTENDED, nextLockAttempt } from '../../../src/store/lock-policy.js';

const settings = { maxWaitMs: 15_000, blockingMs: 25 };

describe('nextLockAttempt', () => {
  it('gives up at once on errors that waiting cannot cure', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EISDIR', 'ENOTDIR']) {
      expect(nextLockAttempt({ code, attempt: 1, elapsedMs: 0 }, settings), code).toBe('give_up');
    }
  });

  it('waits on contention with the thread blocked only at first, in sub-millisecond steps, then yields', () => {
    const first = nextLockAttempt({ code: CONTENDED, attempt: 1, elapsedMs: 0 }, settings);
    expect(first).toEqual({ retryInMs: expect.any(Number), blocking: true });
    expect((first as { retryInMs: number }).retryInMs).toBeLessThan(1);
    // Jitter: the same attempt waits between half and one and a half times its base.
    const low = nextLockAttempt({ code: CONTENDED, attempt: 3, elapsedMs: 1 }, settings, 0) as { retryInMs: number };
    const high = nextLockAttempt({ code: CONTENDED, attempt: 3, elapsedMs: 1 }, settings, 1) as { retryInMs: number };
    expect(high.retryInMs).toBe(3 * low.retryInMs);
    // Never a blocking sleep that would end past the blocking budget.
    expect(nextLockAttempt({ code: CONTENDED, attempt: 12, elapsedMs: 24 }, settings)).toMatchObject({ blocking: false });
    const late = nextLockAttempt({ code: CONTENDED, attempt: 40, elapsedMs: 30 }, settings);
    expect(late).toMatchObject({ blocking: false });
    expect((late as { retryInMs: number }).retryInMs).toBeLessThanOrEqual(25 * 1.5);
  });

  it('stops waiting for a contended lock at the bound', () => {
    expect(nextLockAttempt({ code: CONTENDED, attempt: 500, elapsedMs: 14_000 }, settings)).not.toBe('give_up');
    expect(nextLockAttempt({ code: CONTENDED, attempt: 600, elapsedMs: 15_000 }, settings)).toBe('give_up');
  });

  it('retries an unknown error a few times only', () => {
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 1, elapsedMs: 0 }, settings)).not.toBe('give_up');
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 5, elapsedMs: 100 }, settings)).toBe('give_up');
  });
});
