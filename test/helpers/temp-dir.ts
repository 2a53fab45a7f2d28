import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/** Every dir {@link tempDir} made in this test file and not yet removed. */
const made = new Set<string>();

/**
 * A fresh, private (0700) dir under the temp dir, named `<prefix>XXXXXX`. It is removed when the test
 * file ends, by the `afterAll` this module registers in every file that imports it, whatever the
 * tests did; {@link removeTempDir} removes it sooner.
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Remove a dir and everything in it now (a dir from {@link tempDir} is then not removed again). */
export function removeTempDir(dir: string): void {
  made.delete(dir);
  // Retries: a process the test just stopped may still be closing a file in it.
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}

afterAll(() => {
  for (const dir of [...made]) removeTempDir(dir);
});
