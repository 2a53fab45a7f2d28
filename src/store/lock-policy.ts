/**
 * Errors that waiting will not cure: the lock (and the state it guards) cannot be written at all.
 * Retrying them only makes every run slower (measured: 25 s per call on a read-only dir).
 */
const PERMANENT_FS_ERRORS: ReadonlySet<string> = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EISDIR', 'ENOTDIR']);

/** Creating the lock failed because another holder has the lock. */
export const CONTENDED = 'EEXIST';
/** Other errors (EMFILE, EBUSY, ENOENT while a dir is recreated) get a few quick retries. */
const TRANSIENT_ATTEMPTS = 5;

export interface LockAttemptFailure {
  /** errno-style code of the failed attempt, if any. */
  readonly code: string | undefined;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Time since the first attempt. */
  readonly elapsedMs: number;
}

export interface LockWaitSettings {
  /** Give up waiting for a contended lock after this long (a dead holder's lock goes stale before). */
  readonly maxWaitMs: number;
  /**
   * For this long after the first attempt, waits block the thread (a synchronous sleep) instead
   * of yielding to the event loop: a live holder keeps the lock for about a millisecond, so a
   * short blocking wait usually ends the contention within the same event-loop turn. Past it
   * (a holder that is slow, or dead and not yet stale), waits yield so the server stays responsive.
   */
  readonly blockingMs: number;
}

/**
 * After a failed attempt to take the state lock: wait this many ms (blocking or not) and try
 * again, or give up now. Only contention waits (bounded); a permanent error fails at once.
 * `random` (0..1) jitters the wait so that processes backing off together spread out.
 */
export function nextLockAttempt(
  failure: LockAttemptFailure,
  settings: LockWaitSettings,
  random = 0.5,
): { retryInMs: number; blocking: boolean } | 'give_up' {
  const { code, attempt, elapsedMs } = failure;
  if (code !== undefined && PERMANENT_FS_ERRORS.has(code)) return 'give_up';
  if (elapsedMs >= settings.maxWaitMs) return 'give_up';
  let base: number;
  if (code === CONTENDED) {
    // Blocking: 0.1, 0.2, 0.4 ... ms, capped at 2 ms (a holder's transaction is ~1 ms).
    // Yielding: 1 + attempt ms, capped at 25 ms, as the asynchronous lock always did.
    base = elapsedMs < settings.blockingMs ? Math.min(2, 0.1 * 2 ** (attempt - 1)) : Math.min(25, 1 + attempt);
  } else if (attempt < TRANSIENT_ATTEMPTS) base = 10 * attempt;
  else return 'give_up';
  const blocking = elapsedMs + base < settings.blockingMs;
  return { retryInMs: base * (0.5 + random), blocking };
}
