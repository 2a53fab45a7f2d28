/** Errors that waiting will not cure: the lock (and the state it guards) cannot be written at all. */
const PERMANENT_FS_ERRORS: ReadonlySet<string> = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'EISDIR', 'ENOTDIR']);

/** Creating the lock failed because another holder has the lock. */
export const CONTENDED = 'EEXIST';
/** Other errors (EMFILE, EBUSY, ENOENT while a dir is recreated) get a few quick retries. */
const TRANSIENT_ATTEMPTS = 5;
/**
 * Waits for a contended lock grow from 0.5 ms to this, jittered: a holder keeps the lock a few ms,
 * and a process with transactions queued takes it again at once, so a waiter that polled less
 * often would seldom find it free.
 */
const MAX_BACKOFF_MS = 4;

export interface LockAttemptFailure {
  /** errno-style code of the failed attempt, if any. */
  readonly code: string | undefined;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Time since the first attempt. */
  readonly elapsedMs: number;
}

/**
 * After a failed attempt to take the state lock: wait this many ms and try again, or give up now.
 * Only contention waits (up to `maxWaitMs`); a permanent error fails at once. `random` (0..1)
 * jitters the wait so that processes backing off together spread out.
 */
export function nextLockAttempt(failure: LockAttemptFailure, maxWaitMs: number, random = 0.5): { retryInMs: number } | 'give_up' {
  const { code, attempt, elapsedMs } = failure;
  if (code !== undefined && PERMANENT_FS_ERRORS.has(code)) return 'give_up';
  if (elapsedMs >= maxWaitMs) return 'give_up';
  let base: number;
  if (code === CONTENDED) base = Math.min(MAX_BACKOFF_MS, 0.5 * 2 ** (attempt - 1));
  else if (attempt < TRANSIENT_ATTEMPTS) base = 10 * attempt;
  else return 'give_up';
  return { retryInMs: base * (0.5 + random) };
}

/** What can be known from here about the process a lock names. */
export type HolderLiveness = 'alive' | 'dead' | 'unknown' | 'unreadable';

/**
 * Whether to take over a lock another process holds: at once when its holder is gone (its pid is
 * free, or names a process started at another time: see policy/process-identity.ts); otherwise
 * only once the very same lock has stayed in place for `staleMs` of this process's monotonic
 * clock, whatever the file's mtime says (a crash followed by a clock step can date it anywhere).
 * A live holder keeps the lock for milliseconds; one that keeps it past `staleMs` is stopped or
 * stuck, and waiting on it would stop every ledger update.
 */
export function judgeLock(liveness: HolderLiveness, unchangedForMs: number, staleMs: number): 'take_over' | 'wait' {
  if (liveness === 'dead') return 'take_over';
  return unchangedForMs >= staleMs ? 'take_over' : 'wait';
}
