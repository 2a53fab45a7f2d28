// The test helpers leave nothing in the temp dir: a test file that makes dirs and servers through
// each of them, run by vitest on its own, ends with its temp dir empty, and the checkout as it was.
// A test run that leaves a file in the checkout fails.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { untrackedFiles } from '../helpers/checkout-watch.js';
import { tempDir } from '../helpers/temp-dir.js';
import { ROOT } from './harness.js';

const VITEST = path.join(ROOT, 'node_modules/vitest/vitest.mjs');
const CONFIG = path.join(ROOT, 'test/fixtures/temp-dirs/vitest.config.mjs');
const LEAVES_A_FILE = path.join(ROOT, 'test/fixtures/checkout/vitest.config.mjs');
/** Not a git checkout (an unpacked tarball), or git cannot read it: nothing to compare. */
const NO_GIT = untrackedFiles(ROOT) === null;

/** This run's environment without what vitest told its own workers. */
function freshEnv(tmp: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST')));
  return { ...env, TMPDIR: tmp, NODE_ENV: '' };
}

describe('temp dirs of the test helpers', () => {
  it('tempDir, makeSandbox, useServer, useHttpServer and startTestServer leave the temp dir empty', async () => {
    const tmp = tempDir('helpers-tmpdir-');
    const before = untrackedFiles(ROOT);
    const run = await execa(process.execPath, [VITEST, 'run', '--config', CONFIG], {
      cwd: ROOT,
      env: freshEnv(tmp),
      extendEnv: false,
      reject: false,
    });
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/Tests\s+.*1 passed/);
    expect(readdirSync(tmp)).toEqual([]);
    expect(untrackedFiles(ROOT)).toEqual(before);
  }, 60_000);
});

describe.skipIf(NO_GIT)('files left in the checkout', () => {
  it('a test run that leaves one fails, naming it', async () => {
    const name = `left-by-a-test-${process.pid}`;
    try {
      const run = await execa(process.execPath, [VITEST, 'run', '--config', LEAVES_A_FILE], {
        cwd: ROOT,
        env: { ...freshEnv(tempDir('checkout-tmpdir-')), LEAVE_FILE: name },
        extendEnv: false,
        reject: false,
      });
      expect(run.stdout).toMatch(/Tests\s+.*1 passed/);
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toContain(
        `This test run left 1 file(s) in the checkout (a test's files belong in its temp dir): ${name}`,
      );
    } finally {
      rmSync(path.join(ROOT, name), { force: true });
    }
  }, 60_000);
});
