import { execFileSync } from 'node:child_process';

/**
 * The files under `root` that git neither tracks nor ignores, or `null` when git cannot tell (not a
 * git checkout, no git, a checkout another user owns).
 */
export function untrackedFiles(root: string): string[] | null {
  try {
    const out = execFileSync('git', ['status', '--porcelain', '-z', '--untracked-files=all'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out
      .split('\0')
      .filter((entry) => entry.startsWith('?? '))
      .map((entry) => entry.slice(3));
  } catch {
    return null;
  }
}

/**
 * Watch the checkout for a test run: the returned function, called when the run ends, fails it (exit
 * code 1, the files named on stderr) when the run left a file there that git neither tracks nor
 * ignores. A test's files and tools belong in its temp dir (`tempDir()`); `test-artifacts/` is
 * ignored for what a human should read after the run.
 */
export function watchCheckout(root: string): () => void {
  const before = new Set(untrackedFiles(root) ?? []);
  return () => {
    const left = (untrackedFiles(root) ?? []).filter((file) => !before.has(file));
    if (left.length === 0) return;
    process.stderr.write(
      `\nThis test run left ${left.length} file(s) in the checkout (a test's files belong in its temp dir): ${left.join(', ')}\n`,
    );
    process.exitCode = 1;
  };
}
