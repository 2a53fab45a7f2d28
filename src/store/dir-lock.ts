import { closeSync, constants, openSync, rmdirSync, statSync, unlinkSync } from 'node:fs';

/** Created exclusively: exactly one process succeeds; 0600 like the state files. */
const CREATE_EXCLUSIVE = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY;
const LOCK_FILE_MODE = 0o600;

/**
 * The state's cross-process lock, taken and released synchronously: `<file>.lock` created with
 * `O_CREAT | O_EXCL` (atomic: exactly one process succeeds), unlinked to release. An empty file
 * rather than proper-lockfile's directory because removing it is much cheaper: measured here, an
 * `rmdir` took 150 µs at the median and 3.7 ms at p90 on a busy disk, an `unlink` 16 / 25 µs (a
 * directory has a data block to free and to check for emptiness), and the release is on the path of
 * every run with a task_id. Earlier versions of this server locked with proper-lockfile, which makes
 * `<file>.lock` a directory: the two still exclude each other, since each one's create fails with
 * EEXIST while the other's lock exists, whatever its kind; both judge staleness by the mtime, and a
 * stale lock of either kind is removed here. (An older server cannot remove a stale lock file,
 * which it would `rmdir`: after a crash of this server it fails to lock, saying so in its results,
 * until a current server takes the stale file over.)
 *
 * **No mtime refresh while held.** proper-lockfile refreshes the mtime every `stale / 2` ms so a
 * long-held lock is not taken for a dead one. A transaction here runs synchronously from create
 * to unlink (reads, `fn`, writes: a few ms; tens of ms for a prune over every shard), and a
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
   * @throws the `open` error (EROFS, EACCES...) when the lock cannot be created at all
   */
  tryAcquire(now = Date.now()): boolean {
    try {
      this.#create();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!this.#removeIfStale(now)) return false;
    try {
      this.#create();
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
      unlinkSync(this.path);
    } catch (error) {
      return `could not release the state lock ${this.path}: ${(error as Error).message}`;
    }
    return heldMs > this.#staleMs
      ? `the state lock was held ${Math.round(heldMs)} ms, past its stale time (${this.#staleMs} ms): another process may have taken it over`
      : null;
  }

  #create(): void {
    closeSync(openSync(this.path, CREATE_EXCLUSIVE, LOCK_FILE_MODE));
    this.#takenAt = performance.now();
  }

  /**
   * Removes a stale lock. Two processes that judge it stale at the same moment could in theory
   * remove each other's fresh lock between the `stat` and the removal: the same window
   * proper-lockfile has, only after a crash, and microseconds wide.
   */
  #removeIfStale(now: number): boolean {
    try {
      const lock = statSync(this.path);
      if (lock.mtimeMs >= now - this.#staleMs) return false;
      // A directory is the lock of an older server (proper-lockfile's format).
      if (lock.isDirectory()) rmdirSync(this.path);
      else unlinkSync(this.path);
      return true;
    } catch (error) {
      // Released (or taken over and released) meanwhile: try again at once. Anything else is
      // the caller's to judge.
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
