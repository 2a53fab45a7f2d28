import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dir.js';

const ROOT = path.resolve(__dirname, '../..');
const WELL_FORMATTED = 'export const a = 1;\n';
const BADLY_FORMATTED = 'export const   a =1\n';

let project: string;

/** A copy of the format check in a throwaway project, with the repo's node_modules (prettier). */
function makeProject(): string {
  project = tempDir('check-format-');
  mkdirSync(path.join(project, '.ci'));
  copyFileSync(path.join(ROOT, '.ci/check-format.mjs'), path.join(project, '.ci/check-format.mjs'));
  copyFileSync(path.join(ROOT, '.prettierrc.json'), path.join(project, '.prettierrc.json'));
  writeFileSync(path.join(project, '.prettierignore'), 'node_modules/\n');
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(project, 'node_modules'));
  writeFileSync(path.join(project, 'tracked.ts'), WELL_FORMATTED);
  return project;
}

const check = () => execa(process.execPath, ['.ci/check-format.mjs'], { cwd: project, reject: false });
const git = (...args: string[]) => execa('git', args, { cwd: project });

afterEach(() => rmSync(project, { recursive: true, force: true }));

describe('npm run lint (.ci/check-format.mjs)', () => {
  it('in a git work tree checks the tracked files only: an untracked scratch file does not fail it', async () => {
    makeProject();
    await git('init', '-q');
    await git('add', 'tracked.ts', '.ci/check-format.mjs', '.prettierrc.json', '.prettierignore');
    writeFileSync(path.join(project, 'scratch.ts'), BADLY_FORMATTED);
    const clean = await check();
    expect(clean.exitCode, clean.stdout + clean.stderr).toBe(0);

    writeFileSync(path.join(project, 'tracked.ts'), BADLY_FORMATTED); // a tracked file badly formatted still fails
    const dirty = await check();
    expect(dirty.exitCode).toBe(1);
    expect(dirty.stdout + dirty.stderr).toContain('tracked.ts');
    expect(dirty.stdout + dirty.stderr).not.toContain('scratch.ts');
  });

  it('outside git checks every file prettier does not ignore, and says so', async () => {
    makeProject();
    writeFileSync(path.join(project, 'scratch.ts'), BADLY_FORMATTED);
    const result = await check();
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('not a git work tree');
    expect(result.stdout + result.stderr).toContain('scratch.ts');
  });
});
