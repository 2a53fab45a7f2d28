#!/usr/bin/env node
// `npm run lint`: prettier --check on the files git tracks, so that an untracked scratch file in a
// clone cannot fail `npm test`. Outside a git work tree (an unpacked source archive) there is no
// such list: check the whole folder, as .prettierignore allows.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const prettier = createRequire(import.meta.url).resolve('prettier/bin/prettier.cjs');

function trackedFiles() {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] });
    // A tracked file deleted in the work tree is not there to check.
    return out
      .toString('utf8')
      .split('\0')
      .filter((file) => file !== '' && existsSync(path.join(root, file)));
  } catch {
    return null; // no git, or not a git work tree
  }
}

const files = trackedFiles();
if (files === null) console.error('check-format: not a git work tree: checking every file prettier does not ignore');
// --ignore-unknown: tracked files prettier has no parser for (LICENSE, .ci/run) are not errors.
const args = files === null ? ['--check', '.'] : ['--check', '--ignore-unknown', ...files];
const result = spawnSync(process.execPath, [prettier, ...args], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
