import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** State files hold task ids and model names: only the owner reads them. */
const STATE_FILE_MODE = 0o600;
const STATE_DIR_MODE = 0o700;

/**
 * Replace `file` with `text` atomically: write a temp file beside it (created 0600, unique per
 * writer so two processes never share one), then rename it over the file. A reader sees the old
 * or the new document, never a torn one. The temp file is removed when anything fails.
 * Synchronous: the state is written inside one locked transaction that never yields.
 */
export function writeFileAtomicSync(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  let created = false;
  try {
    const fd = openSync(temp, 'wx', STATE_FILE_MODE);
    created = true;
    try {
      writeFileSync(fd, text, 'utf8');
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
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
