/**
 * Which Chromium the browser tests drive, on the machines users have: a Mac with Chrome, a Linux
 * arm64 box, a shared machine whose temp dir another user wrote first. Pure: the host is injected.
 */
import { rmSync, statSync, lstatSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { cacheProblem, findChromium, type ChromiumHost } from './chromium.js';
import { tempDir } from '../helpers/temp-dir.js';

const CHROME_APP = '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome';

function host(platform: NodeJS.Platform, arch: string, files: readonly string[] = [], bundled = true): ChromiumHost {
  return { platform, arch, exists: (path) => files.includes(path), bundled };
}

describe('findChromium', () => {
  it('takes CHROMIUM_PATH first, and fails (not skips) when it names no file', () => {
    expect(
      findChromium({ CHROMIUM_PATH: '/opt/c/chrome' }, host('linux', 'x64', ['/opt/c/chrome', '/usr/bin/chromium'])),
    ).toEqual({
      kind: 'installed',
      executablePath: '/opt/c/chrome',
      description: 'CHROMIUM_PATH (/opt/c/chrome)',
    });
    expect(() => findChromium({ CHROMIUM_PATH: '/opt/c/chrome' }, host('linux', 'x64'))).toThrow(
      'CHROMIUM_PATH=/opt/c/chrome does not exist',
    );
  });

  it("on Linux: the system's /usr/bin/chromium, else the bundled one on x64, else none with the reason", () => {
    expect(findChromium({}, host('linux', 'x64', ['/usr/bin/chromium']))).toMatchObject({ executablePath: '/usr/bin/chromium' });
    expect(findChromium({}, host('linux', 'x64'))).toEqual({ kind: 'bundled' });
    const arm = findChromium({}, host('linux', 'arm64'));
    expect(arm).toMatchObject({ kind: 'none' });
    expect(arm.kind === 'none' && arm.reason).toMatch(/linux-arm64.*Linux x64 only: set CHROMIUM_PATH/);
    const noDevDependency = findChromium({}, host('linux', 'x64', [], false));
    expect(noDevDependency.kind === 'none' && noDevDependency.reason).toContain('`npm install` installs it');
  });

  it('on macOS: Google Chrome in /Applications, else none (the bundled Chromium is a Linux program)', () => {
    expect(findChromium({}, host('darwin', 'arm64', [CHROME_APP]))).toEqual({
      kind: 'installed',
      executablePath: CHROME_APP,
      description: `the system's ${CHROME_APP}`,
    });
    expect(findChromium({}, host('darwin', 'x64'))).toMatchObject({ kind: 'none' });
  });
});

describe('cacheProblem: the unpacked Chromium in the shared temp dir is used only if it is the user own', () => {
  const dir = (uid: number, mode: number, kind: 'dir' | 'link' | 'file' = 'dir') => ({
    uid,
    mode,
    isDirectory: () => kind === 'dir',
    isSymbolicLink: () => kind === 'link',
  });

  it("accepts the user's own dir that no one else may write", () => {
    expect(cacheProblem(dir(1001, 0o40700), 1001)).toBeNull();
    expect(cacheProblem(dir(1001, 0o40755), 1001)).toBeNull();
  });

  it("refuses another user's dir, one others may write, a symbolic link, a file", () => {
    expect(cacheProblem(dir(0, 0o40700), 1001)).toBe('it belongs to uid 0');
    expect(cacheProblem(dir(1001, 0o40775), 1001)).toBe('others may write it (mode 775)');
    expect(cacheProblem(dir(1001, 0o40757), 1001)).toBe('others may write it (mode 757)');
    expect(cacheProblem(dir(1001, 0o120777, 'link'), 1001)).toBe('it is a symbolic link');
    expect(cacheProblem(dir(1001, 0o100600, 'file'), 1001)).toBe('it is not a directory');
  });

  it('judges what lstat says of real files: a symbolic link to the own dir is still refused', () => {
    const root = tempDir('chromium-cache-');
    try {
      const uid = statSync(root).uid;
      expect(cacheProblem(lstatSync(root), uid)).toBeNull();
      symlinkSync(root, join(root, 'link'));
      expect(cacheProblem(lstatSync(join(root, 'link')), uid)).toBe('it is a symbolic link');
      expect(cacheProblem(lstatSync(root), uid + 1)).toBe(`it belongs to uid ${uid}`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
