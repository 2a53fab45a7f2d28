import { randomUUID } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** State files hold task ids and model names: only the owner reads them. */
export const STATE_FILE_MODE = 0o600;

/**
 * Replace `file` with `text` atomically: write a temp file beside it (created 0600, its name unique
 * to this write, so two processes never share one), then rename it over the file. A reader sees the
 * old or the new document, never a torn one. The temp file is removed when anything fails.
 * (lowdb's own writer shares one temp name between processes and creates files with the umask's mode.)
 */
export async function writeFileAtomic(file: string, text: string): Promise<void> {
  const temp = tempPathFor(file);
  const handle = await open(temp, 'wx', STATE_FILE_MODE);
  try {
    try {
      await handle.writeFile(text, 'utf8');
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => {}); // the original error says what went wrong
    throw error;
  }
}

/** A temp file's name beside `file`, unique to one write: `.<name>.<uuid>.tmp` (see temp-files.ts). */
export function tempPathFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID()}.tmp`);
}

/** The file's text, or null when there is no such file. */
export async function readTextIfAny(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
