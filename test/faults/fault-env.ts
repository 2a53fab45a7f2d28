import { execFileSync } from 'node:child_process';
import { mkdirSync, statfsSync } from 'node:fs';
import path from 'node:path';
import type { Sandbox } from '../e2e/harness.js';
import { removeTempDir, tempDir } from '../helpers/temp-dir.js';

/** A small tmpfs this test mounts, fills or makes read-only (needs root, or a permissive container). */
export interface Tmpfs {
  readonly dir: string;
  readOnly(): void;
  writable(): void;
  unmount(): void;
}

/**
 * Mount a tmpfs of `size` (e.g. "256k") on a fresh dir, or say in one line why it cannot be done
 * here (then the tests that need it are skipped with that line).
 */
export function mountTmpfs(size: string): Tmpfs | { readonly skip: string } {
  if (process.platform !== 'linux') return { skip: `tmpfs fault tests need Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { skip: 'tmpfs fault tests need root to mount a small filesystem (not root here)' };
  const dir = tempDir('faults-tmpfs-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    removeTempDir(dir);
    const stderr = String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim();
    return { skip: `tmpfs fault tests skipped: \`mount -t tmpfs\` failed here (${stderr.split('\n')[0]})` };
  }
  const remount = (mode: 'ro' | 'rw') => execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' });
  return {
    dir,
    readOnly: () => remount('ro'),
    writable: () => remount('rw'),
    unmount: () => {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      removeTempDir(dir);
    },
  };
}

export function isMounted(fs: Tmpfs | { readonly skip: string }): fs is Tmpfs {
  return 'dir' in fs;
}

/**
 * A sandbox whose telemetry dir is `telemetryDir` (e.g. on a tmpfs; created unless `create` is
 * false); trace and fake state stay in a temp dir, removed when the test file ends.
 */
export function sandboxAt(telemetryDir: string, { create = true } = {}): Sandbox {
  const root = tempDir('faults-');
  const sandbox = { root, telemetryDir, traceDir: path.join(root, 'trace'), fakeStateDir: path.join(root, 'fake-state') };
  for (const dir of [sandbox.traceDir, sandbox.fakeStateDir, ...(create ? [telemetryDir] : [])])
    mkdirSync(dir, { recursive: true });
  return sandbox;
}

/**
 * Make `dir` read-only under a running server: a read-only bind mount over it (a remount of the
 * whole tmpfs fails with EBUSY while the server holds a file open). Returns the undo.
 */
export function bindReadOnly(dir: string): () => void {
  execFileSync('mount', ['--bind', dir, dir], { stdio: 'pipe' });
  execFileSync('mount', ['-o', 'remount,bind,ro', dir], { stdio: 'pipe' });
  return () => execFileSync('umount', [dir], { stdio: 'pipe' });
}

/** Fill the filesystem holding `dir` until a write fails with ENOSPC. */
export function fillDisk(dir: string): void {
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${path.join(dir, 'filler')}`, 'bs=4k'], { stdio: 'pipe' });
  } catch {
    // dd exits 1 at "No space left on device": that is the point.
  }
}

/** Fill the filesystem holding `dir` until about `leaveBytes` are free (in 64 KiB steps), in a file named `name`. */
export function fillDiskLeaving(dir: string, leaveBytes: number, name = 'filler'): void {
  const { bavail, bsize } = statfsSync(dir);
  const chunks = Math.floor((bavail * bsize - leaveBytes) / 65_536);
  if (chunks <= 0) return;
  execFileSync('dd', ['if=/dev/zero', `of=${path.join(dir, name)}`, 'bs=64k', `count=${chunks}`], { stdio: 'pipe' });
}
