import { readFileSync } from 'node:fs';

/**
 * Is `pid` running? Gone, or a zombie nobody has reaped yet (an orphan's new parent may be slow to
 * reap it), counts as not running. Linux (/proc).
 */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
