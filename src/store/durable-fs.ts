import { randomUUID } from 'node:crypto';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** State files hold task ids and model names: only the owner reads them. */
const STATE_FILE_MODE = 0o600;

/**
 * Replace `file` with `text` atomically: write a temp file beside it (its name unique to this write,
 * so two processes never share one), then rename it over the file. A reader sees the old or the new
 * document, never a torn one. The temp file is removed when anything fails.
 * (lowdb's own writer shares one temp name between processes and creates files with the umask's mode.)
 */
export async function writeFileAtomic(file: string, text: string): Promise<void> {
  const temp = tempPathFor(file);
  await createFile(temp, text);
  await rename(temp, file).catch(async (error: unknown) => {
    await unlink(temp).catch(() => {}); // the original error says what went wrong
    throw error;
  });
}

/** Create `file` (0600) holding `text`: rejects with EEXIST when it exists; removed again when writing it fails. */
export async function createFile(file: string, text: string): Promise<void> {
  const handle = await open(file, 'wx', STATE_FILE_MODE);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(file).catch(() => {});
    throw error;
  }
}

/** A temp file's name beside `file`, unique to one write: `.<name>.<uuid>.tmp` (see temp-files.ts). */
export function tempPathFor(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID()}.tmp`);
}

/** What `work` resolves to, or `fallback` when the file it reads or removes does not exist. */
export async function orIfMissing<T, F>(work: Promise<T>, fallback: F): Promise<T | F> {
  try {
    return await work;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return fallback;
    throw error;
  }
}

/** The file's text, or null when there is no such file. */
export function readTextIfAny(file: string): Promise<string | null> {
  return orIfMissing(readFile(file, 'utf8'), null);
}
