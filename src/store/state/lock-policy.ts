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

/**
 * After a failed attempt to take the state lock (`code`: its errno-style code; `attempt`: 1 for the
 * first; `elapsedMs`: since the first): wait this many ms and try again, or give up now. Only
 * contention waits (up to `maxWaitMs`); a permanent error fails at once. `random` (0..1) jitters
 * the wait so that processes backing off together spread out.
 */
export function nextLockAttempt(
  { code, attempt, elapsedMs }: { readonly code: string | undefined; readonly attempt: number; readonly elapsedMs: number },
  maxWaitMs: number,
  random = 0.5,
): { retryInMs: number } | 'give_up' {
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
 * in it, or (without hard links) within milliseconds of creating it, so only a holder killed in
 * between leaves such a file for longer.
 */
export const ABANDONED_LOCK_AGE_MS = 2_000;

/** Why to take over a lock (see {@link judgeLock}), or `wait`. */
export type LockJudgement = 'holder_gone' | 'abandoned' | 'unchanged' | 'wait';

/**
 * Whether to take over a lock another process holds: at once when its holder is gone (`holder_gone`:
 * its pid is free, or names a process started at another time: see policy/process-identity.ts), or
 * when the file names no holder and its mtime is {@link ABANDONED_LOCK_AGE_MS} away from now
 * (`abandoned`; before or after: a clock stepped back dates it ahead); otherwise only once the very
 * same lock has stayed in place for `staleMs` of this process's monotonic clock (`unchanged`),
 * whatever the file's mtime says (a crash followed by a clock step can date it anywhere). A live
 * holder keeps the lock for milliseconds; one that keeps it past `staleMs` is stopped or stuck, and
 * waiting on it would stop every ledger update.
 */
export function judgeLock(liveness: HolderLiveness, unchangedForMs: number, staleMs: number, fileAgeMs = 0): LockJudgement {
  if (liveness === 'dead') return 'holder_gone';
  if (liveness === 'unreadable' && Math.abs(fileAgeMs) >= ABANDONED_LOCK_AGE_MS) return 'abandoned';
  return unchangedForMs >= staleMs ? 'unchanged' : 'wait';
}
