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

interface LockAttemptFailure {
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
 * A lock file that names no holder (empty or not a holder: `unreadable`) and was written longer ago
 * than this, by the wall clock either way, is abandoned. A server writes the lock with its holder
 * already in it; one that created the file first and wrote its holder after (an older version) did
 * so within milliseconds, so only a holder killed in between leaves such a file for longer.
 */
export const ABANDONED_LOCK_AGE_MS = 2_000;

/** Why to take over a lock, or `wait`. */
export type LockJudgement =
  /** Its holder is gone. */
  | 'holder_gone'
  /** It names no holder and was written long enough ago: left by a holder killed while taking it. */
  | 'abandoned'
  /** The very same lock has stayed for the stale time: its holder is stopped or stuck. */
  | 'unchanged'
  | 'wait';

/**
 * Whether to take over a lock another process holds: at once when its holder is gone (its pid is
 * free, or names a process started at another time: see policy/process-identity.ts), or when the
 * file names no holder and its mtime is {@link ABANDONED_LOCK_AGE_MS} away from now (before or
 * after: a clock stepped back dates it ahead); otherwise only once the very same lock has stayed in
 * place for `staleMs` of this process's monotonic clock, whatever the file's mtime says (a crash
 * followed by a clock step can date it anywhere). A live holder keeps the lock for milliseconds; one
 * that keeps it past `staleMs` is stopped or stuck, and waiting on it would stop every ledger update.
 */
export function judgeLock(liveness: HolderLiveness, unchangedForMs: number, staleMs: number, fileAgeMs = 0): LockJudgement {
  if (liveness === 'dead') return 'holder_gone';
  if (liveness === 'unreadable' && Math.abs(fileAgeMs) >= ABANDONED_LOCK_AGE_MS) return 'abandoned';
  return unchangedForMs >= staleMs ? 'unchanged' : 'wait';
}
