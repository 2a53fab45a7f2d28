import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, futimesSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** State files hold task ids and model names: only the owner reads them. */
const STATE_FILE_MODE = 0o600;
const STATE_DIR_MODE = 0o700;

/** What identifies one version of a file: a rename keeps it, any rewrite changes it. */
export interface FileIdentity {
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
}

/**
 * How far past the replaced file's mtime a new version's mtime is set when the clock has not moved
 * on (file times advance in coarse ticks of a few ms): 2 µs, more than a double's rounding of the
 * seconds `futimes` takes.
 */
const MTIME_STEP_NS = 2000n;

/** Makes temp names unique across processes (with the pid) without a random draw per write (~20 µs). */
const TEMP_TAG = `${process.pid}-${randomBytes(4).toString('hex')}`;
let tempCounter = 0;

/**
 * Replace `file` with `text` atomically: write a temp file beside it (created 0600, unique per
 * writer so two processes never share one), then rename it over the file. A reader sees the old
 * or the new document, never a torn one. The temp file is removed when anything fails.
 * Synchronous: the state is written inside one locked transaction that never yields.
 * Returns the identity of the file written (from the temp file's descriptor: a rename keeps it),
 * so the caller's cache needs no further `stat`.
 *
 * Each version's mtime is later than the one it replaces (set a few µs past it when the coarse
 * file clock has not moved on): with the writers serialised by the store's lock, no later version
 * can show the inode, size and mtime of an earlier one, even when the filesystem hands the freed
 * inode straight to the next temp file (ext4 does) and several writes fall in one clock tick. A
 * cache keyed on that identity therefore never takes another process's newer file for its own.
 */
export function writeFileAtomicSync(file: string, text: string): FileIdentity {
  const dir = path.dirname(file);
  const base = path.basename(file);
  let temp = '';
  let created = false;
  try {
    let fd = -1;
    // A name left by a crashed process whose pid came back: take the next one.
    for (let attempt = 0; fd === -1; attempt += 1) {
      temp = path.join(dir, `.${base}.${TEMP_TAG}-${(tempCounter += 1)}.tmp`);
      try {
        fd = openSync(temp, 'wx', STATE_FILE_MODE);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw error;
      }
    }
    created = true;
    let written: FileIdentity;
    try {
      writeFileSync(fd, text, 'utf8');
      let stats = fstatSync(fd, { bigint: true });
      const replaced = statSync(file, { bigint: true, throwIfNoEntry: false });
      if (replaced !== undefined && stats.mtimeNs <= replaced.mtimeNs) {
        const seconds = Number(replaced.mtimeNs + MTIME_STEP_NS) / 1e9;
        futimesSync(fd, seconds, seconds);
        stats = fstatSync(fd, { bigint: true });
      }
      written = { ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs };
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    return written;
  } catch (error) {
    if (created) {
      try {
        unlinkSync(temp);
      } catch {
        // the original error says what went wrong
      }
    }
    throw error;
  }
}

/**
 * `mkdir -p` (new dirs 0700) that names the real cause: Node's recursive mkdir reports ENOENT for
 * the leaf when a missing parent cannot be created (say under a read-only mount), so on failure
 * the first missing ancestor is created alone to get its own error (EROFS, EACCES...).
 */
export function ensureDirSync(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: STATE_DIR_MODE });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    let missing = dir;
    while (path.dirname(missing) !== missing && !exists(path.dirname(missing))) missing = path.dirname(missing);
    mkdirSync(missing, { mode: STATE_DIR_MODE }); // throws the telling error
    mkdirSync(dir, { recursive: true, mode: STATE_DIR_MODE });
  }
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}
