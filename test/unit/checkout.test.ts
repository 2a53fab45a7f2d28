// What git tracks at the root of the repository: no test tool or link left there by a session.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { untrackedFiles } from '../helpers/checkout-watch.js';

const ROOT = path.resolve(__dirname, '../..');

describe.skipIf(untrackedFiles(ROOT) === null)('the checkout', () => {
  it('tracks no symlink that points nowhere', () => {
    const links = execFileSync('git', ['ls-files', '-s', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((entry) => entry.startsWith('120000 '))
      .map((entry) => entry.slice(entry.indexOf('\t') + 1));
    expect(links.filter((link) => !existsSync(path.join(ROOT, link)))).toEqual([]);
  });
});
