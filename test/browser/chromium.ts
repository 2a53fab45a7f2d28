/**
 * Which Chromium the browser tests drive (playwright-core downloads no browser of its own):
 * 1. CHROMIUM_PATH, when set;
 * 2. the system's: /usr/bin/chromium (Debian's `chromium` package) on Linux, Google Chrome or
 *    Chromium in /Applications on macOS;
 * 3. otherwise, on Linux x64, the headless Chromium shipped inside the dev dependency
 *    @sparticuz/chromium, so that `npm install && npm test` runs these tests on a machine with no
 *    browser and no network;
 * 4. otherwise none: the tests skip, and one line says why.
 *
 * @sparticuz/chromium ships Chromium as brotli archives and unpacks them into os.tmpdir() on first
 * use, then reuses any `/tmp/chromium` it finds, whatever its version, whoever made it, and even if
 * an earlier unpack was cut short. So it is unpacked here into a fresh staging dir (TMPDIR pointed
 * there, in a child process) that is renamed, complete, to a dir of the temp dir named after the
 * package's version and the user. That dir is used only if it is the user's own and no one else may
 * write it (the temp dir is shared: anyone could have made it first); otherwise the tests unpack a
 * private copy, removed when they end (`dispose`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export interface ChromiumChoice {
  readonly executablePath: string;
  readonly args: readonly string[];
  /** Extra environment for the browser process. */
  readonly env: Readonly<Record<string, string>>;
  /** Which Chromium this is, for messages. */
  readonly description: string;
  /** Remove what was unpacked for this run only (nothing for an installed or cached Chromium). */
  dispose(): void;
}

const ROOT = resolve(__dirname, '../..');
/** Browsers installed system-wide that these tests drive, by platform, in order of preference. */
const SYSTEM_CHROMIUM: Partial<Record<NodeJS.Platform, readonly string[]>> = {
  linux: ['/usr/bin/chromium'],
  darwin: ['/Applications/Google Chrome.app/Contents/MacOS/Google Chrome', '/Applications/Chromium.app/Contents/MacOS/Chromium'],
};
/** The flags a full Chromium needs here (no sandbox as root; no background calls to a closed network). */
const FULL_CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/**
 * @sparticuz/chromium's flags that loosen the page's security rules (made for scraping in a
 * serverless function). The report must work under the rules a user's browser applies.
 */
const LOOSENING_ARGS = new Set(['--disable-web-security', '--allow-running-insecure-content']);

/** Where this machine's Chromium comes from, found before anything is unpacked. */
export type ChromiumSource =
  | { readonly kind: 'installed'; readonly executablePath: string; readonly description: string }
  | { readonly kind: 'bundled' }
  | { readonly kind: 'none'; readonly reason: string };

/** What `findChromium` looks at. */
export interface ChromiumHost {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  exists(path: string): boolean;
  /** Is the dev dependency @sparticuz/chromium installed? */
  readonly bundled: boolean;
}

const thisHost = (): ChromiumHost => ({
  platform: process.platform,
  arch: process.arch,
  exists: existsSync,
  bundled: bundledEntry() !== null,
});

/** The Chromium to drive, or why there is none; CHROMIUM_PATH naming no file is an error, not a skip. */
export function findChromium(env: NodeJS.ProcessEnv = process.env, host: ChromiumHost = thisHost()): ChromiumSource {
  const configured = env.CHROMIUM_PATH?.trim();
  if (configured) {
    if (!host.exists(configured)) throw new Error(`CHROMIUM_PATH=${configured} does not exist`);
    return { kind: 'installed', executablePath: configured, description: `CHROMIUM_PATH (${configured})` };
  }
  const system = (SYSTEM_CHROMIUM[host.platform] ?? []).find((path) => host.exists(path));
  if (system !== undefined) return { kind: 'installed', executablePath: system, description: `the system's ${system}` };
  if (host.platform !== 'linux' || host.arch !== 'x64') {
    return {
      kind: 'none',
      reason: `no Chromium found on ${host.platform}-${host.arch}, and the one @sparticuz/chromium ships runs on Linux x64 only: set CHROMIUM_PATH to a Chrome or Chromium`,
    };
  }
  if (!host.bundled) {
    return {
      kind: 'none',
      reason:
        'no Chromium: neither CHROMIUM_PATH, nor /usr/bin/chromium, nor the dev dependency @sparticuz/chromium (`npm install` installs it)',
    };
  }
  return { kind: 'bundled' };
}

export async function chooseChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumChoice> {
  const source = findChromium(env);
  if (source.kind === 'none') throw new Error(source.reason);
  if (source.kind === 'installed') return { ...source, args: FULL_CHROMIUM_ARGS, env: {}, dispose: () => {} };
  return bundledChromium();
}

function bundledEntry(): string | null {
  try {
    return createRequire(__filename).resolve('@sparticuz/chromium');
  } catch {
    return null;
  }
}

/**
 * Why `dir` (as `lstat` saw it) must not be used as this user's unpacked Chromium, or null. Anyone
 * may create a name in the shared temp dir first; its sticky bit keeps a dir the user owns, and no
 * one else may write, from being replaced or changed.
 */
export function cacheProblem(dir: Pick<Stats, 'uid' | 'mode' | 'isDirectory' | 'isSymbolicLink'>, uid: number): string | null {
  if (dir.isSymbolicLink()) return 'it is a symbolic link';
  if (!dir.isDirectory()) return 'it is not a directory';
  if (dir.uid !== uid) return `it belongs to uid ${dir.uid}`;
  if ((dir.mode & 0o022) !== 0) return `others may write it (mode ${(dir.mode & 0o777).toString(8)})`;
  return null;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

async function bundledChromium(): Promise<ChromiumChoice> {
  const { default: sparticuz } = await import('@sparticuz/chromium');
  const version = (
    JSON.parse(readFileSync(join(dirname(bundledEntry()!), '..', '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  const { dir, privateCopy } = unpackedChromium(version);
  // The package's fonts.conf names /tmp/fonts: point fontconfig at the unpacked copy, after the system's fonts.
  const fontsConf = join(dir, 'fonts-here.conf');
  if (!existsSync(fontsConf)) {
    writeFileSync(
      fontsConf,
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n  <dir>${join(dir, 'fonts', 'fonts')}</dir>\n</fontconfig>\n`,
    );
  }
  return {
    executablePath: join(dir, 'chromium'),
    args: sparticuz.args.filter((arg) => !LOOSENING_ARGS.has(arg)),
    env: { FONTCONFIG_FILE: fontsConf },
    description: `@sparticuz/chromium ${version} (unpacked in ${dir})`,
    dispose: () => {
      if (privateCopy) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The dir holding the unpacked Chromium: the user's own in the temp dir, unpacked once; else a private copy for this run. */
function unpackedChromium(version: string): { dir: string; privateCopy: boolean } {
  const uid = process.getuid?.() ?? 0;
  const cache = join(tmpdir(), `ollama-runner-mcp-chromium-${version}-uid${uid}`);
  const found = lstatOrNull(cache);
  const problem = found === null ? null : cacheProblem(found, uid);
  if (problem !== null) {
    const own = unpack();
    process.stderr.write(`browser tests: not using ${cache} (${problem}); unpacked Chromium into ${own} for this run\n`);
    return { dir: own, privateCopy: true };
  }
  if (found !== null && existsSync(join(cache, 'chromium'))) return { dir: cache, privateCopy: false };
  rmSync(cache, { recursive: true, force: true }); // never a half copy: only complete dirs are renamed in
  const staging = unpack();
  try {
    renameSync(staging, cache);
  } catch (error) {
    // Another test process finished first: use its copy, if it is as safe as ours.
    const theirs = lstatOrNull(cache);
    if (theirs === null || cacheProblem(theirs, uid) !== null || !existsSync(join(cache, 'chromium'))) throw error;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { dir: cache, privateCopy: false };
}

/** Unpack the package's archives into a fresh private dir, returned once complete. Needs no network: the archives are in the package. */
function unpack(): string {
  const staging = mkdtempSync(join(tmpdir(), 'ollama-runner-mcp-chromium-staging-'));
  try {
    const script =
      "const { default: chromium } = await import('@sparticuz/chromium'); process.stdout.write(await chromium.executablePath());";
    const unpacked = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, TMPDIR: staging, TMP: staging, TEMP: staging },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (unpacked !== join(staging, 'chromium')) throw new Error(`@sparticuz/chromium unpacked to ${unpacked}, not ${staging}`);
    return staging;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}
