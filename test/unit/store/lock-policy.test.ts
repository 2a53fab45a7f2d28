import { describe, expect, it } from 'vitest';
import { nextLockAttempt } from '../../../src/store/lock-policy.js';

const settings = { maxWaitMs: 15_000 };

describe('nextLockAttempt', () => {
  it('gives up at once on errors that waiting cannot cure', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EISDIR', 'ENOTDIR']) {
      expect(nextLockAttempt({ code, attempt: 1, elapsedMs: 0 }, settings), code).toBe('give_up');
    }
  });

  it('waits briefly on contention, and only up to the bound', () => {
    const first = nextLockAttempt({ code: 'ELOCKED', attempt: 1, elapsedMs: 0 }, settings);
    expect(first).toEqual({ retryInMs: expect.any(Number) });
    expect((first as { retryInMs: number }).retryInMs).toBeLessThanOrEqual(25);
    expect(nextLockAttempt({ code: 'ELOCKED', attempt: 500, elapsedMs: 14_000 }, settings)).not.toBe('give_up');
    expect(nextLockAttempt({ code: 'ELOCKED', attempt: 600, elapsedMs: 15_000 }, settings)).toBe('give_up');
  });

  it('retries an unknown error a few times only', () => {
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 1, elapsedMs: 0 }, settings)).not.toBe('give_up');
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 5, elapsedMs: 100 }, settings)).toBe('give_up');
  });
});
