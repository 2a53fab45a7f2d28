import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

/** A temp file of an atomic write or of a lock's holder (`.<name>.<uuid>.tmp`, durable-fs.ts `tempPathFor`). */
const TEMP_NAME = /^\..+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/**
 * A temp file last written this long ago (or dated this far ahead: the clock stepped back) was left
 * by a process killed mid-write. A live write renames its temp file milliseconds after creating it,
 * and a lock's holder waits for the lock 15 s at most.
 */
export const ABANDONED_TEMP_AGE_MS = 60_000;

/** Is a temp file written at `mtimeMs` abandoned at `now` (epoch ms)? */
export function isAbandonedTemp(mtimeMs: number, now: number): boolean {
  return Math.abs(now - mtimeMs) >= ABANDONED_TEMP_AGE_MS;
}

/**
 * Remove the temp files in `dir` (those of targets named `of`, when given) that a process killed
 * mid-write left; returns their names. Never rejects: a file that cannot be read or removed is skipped.
 */
export async function removeAbandonedTemps(dir: string, of?: string, now = Date.now()): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const name of names) {
    if (!TEMP_NAME.test(name) || (of !== undefined && !name.startsWith(`.${of}.`))) continue;
    const file = path.join(dir, name);
    try {
      if (!isAbandonedTemp((await stat(file)).mtimeMs, now)) continue;
      await unlink(file);
      removed.push(name);
    } catch {
      // Renamed or removed meanwhile, or not this user's to remove: nothing to do.
    }
  }
  return removed;
}
