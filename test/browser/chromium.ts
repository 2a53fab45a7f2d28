/**
 * Which Chromium the browser tests drive (playwright-core downloads no browser of its own):
 * 1. CHROMIUM_PATH, when set;
 * 2. the system's /usr/bin/chromium (Debian's `chromium` package), when installed;
 * 3. otherwise the headless Chromium shipped inside the dev dependency @sparticuz/chromium, so that
 *    `npm install && npm test` runs these tests on a machine with no browser and no network.
 *
 * @sparticuz/chromium ships Chromium as brotli archives and unpacks them into os.tmpdir() on first
 * use, then reuses any `/tmp/chromium` it finds, whatever its version and even if an earlier unpack
 * was cut short. So it is unpacked here into a fresh staging dir (TMPDIR pointed there, in a child
 * process) that is renamed, complete, to a dir named after the package's version and the user.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
}

const ROOT = resolve(__dirname, '../..');
const SYSTEM_CHROMIUM = '/usr/bin/chromium';
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

export async function chooseChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumChoice> {
  const configured = env.CHROMIUM_PATH?.trim();
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH=${configured} does not exist`);
    return { executablePath: configured, args: FULL_CHROMIUM_ARGS, env: {}, description: `CHROMIUM_PATH (${configured})` };
  }
  if (existsSync(SYSTEM_CHROMIUM)) {
    return { executablePath: SYSTEM_CHROMIUM, args: FULL_CHROMIUM_ARGS, env: {}, description: `the system's ${SYSTEM_CHROMIUM}` };
  }
  return bundledChromium();
}

async function bundledChromium(): Promise<ChromiumChoice> {
  let entry: string;
  try {
    entry = createRequire(__filename).resolve('@sparticuz/chromium');
  } catch {
    throw new Error(
      'no Chromium for the browser tests: neither CHROMIUM_PATH, nor /usr/bin/chromium, nor the dev dependency ' +
        '@sparticuz/chromium (run `npm install`; it ships a headless Chromium)',
    );
  }
  const { default: sparticuz } = await import('@sparticuz/chromium');
  const version = (JSON.parse(readFileSync(join(dirname(entry), '..', '..', 'package.json'), 'utf8')) as { version: string })
    .version;
  const dir = join(tmpdir(), `ollama-runner-mcp-chromium-${version}-uid${process.getuid?.() ?? 0}`);
  const executablePath = join(dir, 'chromium');
  if (!existsSync(executablePath)) {
    rmSync(dir, { recursive: true, force: true }); // never a half copy: only complete dirs are renamed in
    unpack(dir);
  }
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
    executablePath,
    args: sparticuz.args.filter((arg) => !LOOSENING_ARGS.has(arg)),
    env: { FONTCONFIG_FILE: fontsConf },
    description: `@sparticuz/chromium ${version} (unpacked in ${dir})`,
  };
}

/** Unpack the package's archives into `dir`, all or nothing. Needs no network: the archives are in the package. */
function unpack(dir: string): void {
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
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another test process finished first: use its copy.
      if (!existsSync(join(dir, 'chromium'))) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
