import { describe, expect, it } from 'vitest';
import { ABANDONED_LOCK_AGE_MS, CONTENDED, judgeLock, nextLockAttempt } from '../../../src/store/state/lock-policy.js';

const MAX_WAIT = 15_000;

describe('nextLockAttempt', () => {
  it('gives up at once on errors that waiting cannot cure', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EISDIR', 'ENOTDIR']) {
      expect(nextLockAttempt({ code, attempt: 1, elapsedMs: 0 }, MAX_WAIT), code).toBe('give_up');
    }
  });

  it('backs off on contention from under a millisecond to a few, jittered', () => {
    const first = nextLockAttempt({ code: CONTENDED, attempt: 1, elapsedMs: 0 }, MAX_WAIT) as { retryInMs: number };
    expect(first.retryInMs).toBeLessThan(1);
    // Jitter: the same attempt waits between half and one and a half times its base.
    const low = nextLockAttempt({ code: CONTENDED, attempt: 3, elapsedMs: 1 }, MAX_WAIT, 0) as { retryInMs: number };
    const high = nextLockAttempt({ code: CONTENDED, attempt: 3, elapsedMs: 1 }, MAX_WAIT, 1) as { retryInMs: number };
    expect(high.retryInMs).toBe(3 * low.retryInMs);
    const late = nextLockAttempt({ code: CONTENDED, attempt: 40, elapsedMs: 300 }, MAX_WAIT, 1) as { retryInMs: number };
    expect(late.retryInMs).toBeGreaterThan(high.retryInMs);
    expect(late.retryInMs).toBeLessThanOrEqual(4 * 1.5);
  });

  it('stops waiting for a contended lock at the bound', () => {
    expect(nextLockAttempt({ code: CONTENDED, attempt: 500, elapsedMs: 14_000 }, MAX_WAIT)).not.toBe('give_up');
    expect(nextLockAttempt({ code: CONTENDED, attempt: 600, elapsedMs: 15_000 }, MAX_WAIT)).toBe('give_up');
  });

  it('retries an unknown error a few times only', () => {
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 1, elapsedMs: 0 }, MAX_WAIT)).not.toBe('give_up');
    expect(nextLockAttempt({ code: 'EMFILE', attempt: 5, elapsedMs: 100 }, MAX_WAIT)).toBe('give_up');
  });
});

describe('judgeLock', () => {
  it('takes over at once the lock of a holder that is gone, however recently it changed', () => {
    expect(judgeLock('dead', 0, 10_000)).toBe('holder_gone');
  });

  it('waits on any other holder until the same lock has stayed for the stale time', () => {
    for (const liveness of ['alive', 'unknown', 'unreadable'] as const) {
      expect(judgeLock(liveness, 9_999, 10_000), liveness).toBe('wait');
      expect(judgeLock(liveness, 10_000, 10_000), liveness).toBe('unchanged');
    }
  });

  it('takes over at once a lock that names no holder once its file is a moment old (or dated ahead)', () => {
    // An empty lock: its writer was killed between creating it and writing its holder.
    expect(judgeLock('unreadable', 0, 10_000, ABANDONED_LOCK_AGE_MS)).toBe('abandoned');
    expect(judgeLock('unreadable', 0, 10_000, -ABANDONED_LOCK_AGE_MS)).toBe('abandoned');
    // Just created: its writer may be about to write its holder.
    expect(judgeLock('unreadable', 0, 10_000, ABANDONED_LOCK_AGE_MS - 1)).toBe('wait');
    // A lock that names a live holder is never judged by its mtime.
    expect(judgeLock('alive', 0, 10_000, 3_600_000)).toBe('wait');
  });
});
