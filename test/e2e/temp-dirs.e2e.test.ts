// The test helpers leave nothing in the temp dir: a test file that makes dirs and servers through
// each of them, run by vitest on its own, ends with its temp dir empty.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dir.js';
import { ROOT } from './harness.js';

const VITEST = path.join(ROOT, 'node_modules/vitest/vitest.mjs');
const CONFIG = path.join(ROOT, 'test/fixtures/temp-dirs/vitest.config.mjs');

/** This run's environment without what vitest told its own workers. */
function freshEnv(tmp: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST')));
  return { ...env, TMPDIR: tmp, NODE_ENV: '' };
}

describe('temp dirs of the test helpers', () => {
  it('tempDir, makeSandbox, useServer, useHttpServer and startTestServer leave the temp dir empty', async () => {
    const tmp = tempDir('helpers-tmpdir-');
    const run = await execa(process.execPath, [VITEST, 'run', '--config', CONFIG], {
      cwd: ROOT,
      env: freshEnv(tmp),
      extendEnv: false,
      reject: false,
    });
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/Tests\s+.*1 passed/);
    expect(readdirSync(tmp)).toEqual([]);
  }, 60_000);
});
