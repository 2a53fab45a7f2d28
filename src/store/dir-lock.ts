import { mkdirSync, rmdirSync, statSync } from 'node:fs';

/**
 * The state's cross-process lock, taken and released synchronously: a directory `<file>.lock`
 * created with `mkdir` (atomic: exactly one process succeeds), removed to release. This is the
 * format proper-lockfile uses (earlier versions of this server took the lock through it), so an
 * old and a new server on the same files still exclude each other: each sees the other's dir
 * and waits, and each judges staleness the same way, by the dir's mtime.
 *
 * **No mtime refresh while held.** proper-lockfile refreshes the mtime every `stale / 2` ms so a
 * long-held lock is not taken for a dead one. A transaction here runs synchronously from `mkdir`
 * to `rmdir` (reads, `fn`, writes: a few ms; tens of ms for a prune over every shard), and a
 * timer could not fire during it anyway. Only a stopped process (SIGSTOP) or a filesystem that
 * blocks for longer than the stale time (10 s) could outlast it; the holder then notices on
 * release (see {@link DirLock.release}) and says so.
 */
export class DirLock {
  readonly path: string;
  readonly #staleMs: number;
  #takenAt = 0;

  constructor(lockPath: string, staleMs: number) {
    this.path = lockPath;
    this.#staleMs = staleMs;
  }

  /**
   * One attempt: `true` when the lock is ours, `false` when a live holder has it. A lock whose
   * mtime is older than the stale time belongs to a dead holder: it is removed and taken.
   * @throws the `mkdir` error (EROFS, EACCES...) when the lock cannot be created at all
   */
  tryAcquire(now = Date.now()): boolean {
    try {
      mkdirSync(this.path);
      this.#takenAt = performance.now();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!this.#removeIfStale(now)) return false;
    try {
      mkdirSync(this.path);
      this.#takenAt = performance.now();
      return true;
    } catch (error) {
      // Another process took it over first.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }

  /**
   * Remove the lock. Returns a warning when the lock may not have been exclusive: held past the
   * stale time (another process may have taken it over) or already gone.
   */
  release(): string | null {
    const heldMs = performance.now() - this.#takenAt;
    try {
      rmdirSync(this.path);
    } catch (error) {
      return `could not release the state lock ${this.path}: ${(error as Error).message}`;
    }
    return heldMs > this.#staleMs
      ? `the state lock was held ${Math.round(heldMs)} ms, past its stale time (${this.#staleMs} ms): another process may have taken it over`
      : null;
  }

  /**
   * Removes a stale lock dir. Two processes that judge it stale at the same moment could in
   * theory remove each other's fresh lock between the `stat` and the `rmdir`: the same window
   * proper-lockfile has, only after a crash, and microseconds wide.
   */
  #removeIfStale(now: number): boolean {
    try {
      if (statSync(this.path).mtimeMs >= now - this.#staleMs) return false;
      rmdirSync(this.path);
      return true;
    } catch (error) {
      // Released (or taken over and released) meanwhile: try again at once. Anything else (a
      // file in the way: ENOTDIR) is the caller's to judge.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
      throw error;
    }
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Block the thread for `ms` (fractions allowed): a short wait that stays within the event-loop turn. */
export function sleepSync(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}
