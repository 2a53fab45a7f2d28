/**
 * Errors that waiting will not cure: the lock (and the state it guards) cannot be written at all.
 * Retrying them only makes every run slower (measured: 25 s per call on a read-only dir).
 */
const PERMANENT_FS_ERRORS: ReadonlySet<string> = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EISDIR', 'ENOTDIR']);

/** proper-lockfile's code for "another holder has the lock". */
const CONTENDED = 'ELOCKED';
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
}

/**
 * After a failed attempt to take the state lock: wait this many ms and try again, or give up now.
 * Only contention waits (bounded); a permanent error fails at once.
 */
export function nextLockAttempt(failure: LockAttemptFailure, settings: LockWaitSettings): { retryInMs: number } | 'give_up' {
  const { code, attempt, elapsedMs } = failure;
  if (code !== undefined && PERMANENT_FS_ERRORS.has(code)) return 'give_up';
  if (elapsedMs >= settings.maxWaitMs) return 'give_up';
  if (code === CONTENDED) return { retryInMs: Math.min(25, 1 + attempt) };
  return attempt < TRANSIENT_ATTEMPTS ? { retryInMs: 10 * attempt } : 'give_up';
}
