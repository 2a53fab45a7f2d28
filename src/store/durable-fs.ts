import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
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
      const { ino, size, mtimeNs } = fstatSync(fd, { bigint: true });
      written = { ino, size, mtimeNs };
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
