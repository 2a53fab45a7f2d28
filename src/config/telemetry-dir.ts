import { existsSync, mkdirSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder name under the per-user state dir. */
const APP_DIR_NAME = 'ollama-runner-mcp';
const TELEMETRY_DIR_VARIABLE = 'OLLAMA_MCP_TELEMETRY_DIR';

/** Where runs.jsonl and the state files go, and why there (shown by the banner and `doctor`). */
interface TelemetryDirChoice {
  readonly dir: string;
  readonly why: string;
}

/** No dir can be chosen (a blank or unusable setting, no home): start-up stops with this message. */
interface TelemetryDirProblem {
  readonly kind: 'telemetry_dir_problem';
  readonly variable: string;
  readonly message: string;
}

type Choice = TelemetryDirChoice | TelemetryDirProblem;

export interface TelemetryDirContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly platform: NodeJS.Platform;
  /** The user's home ('' when unknown). */
  readonly home: string;
  /** Relative OLLAMA_MCP_TELEMETRY_DIR values are resolved against this. */
  readonly cwd: string;
  /** The folder holding package.json and dist/. */
  readonly packageRoot: string;
  /** What marks packageRoot as a source checkout (see detectSourceCheckout), or null for an installed package. */
  readonly sourceCheckout: string | null;
}

/**
 * Choose the telemetry dir (pure): 1. `OLLAMA_MCP_TELEMETRY_DIR`, with a leading `~` expanded (MCP
 * clients start servers without a shell); 2. a source checkout's git-ignored `telemetry/`; 3. the
 * per-user state dir, as an installed package never writes inside itself (`npm i -g` replaces that
 * folder on every upgrade, a non-root user cannot write there, under npx it is a cache).
 */
export function resolveTelemetryDir(context: TelemetryDirContext): Choice {
  const paths = context.platform === 'win32' ? path.win32 : path.posix;
  const raw = context.env[TELEMETRY_DIR_VARIABLE];
  if (raw !== undefined) return fromVariable(raw.trim(), context, paths);
  if (context.sourceCheckout !== null) {
    return {
      dir: paths.join(context.packageRoot, 'telemetry'),
      why: `running from a source checkout: ${context.sourceCheckout}`,
    };
  }
  return userStateDir(context, paths);
}

function fromVariable(value: string, context: TelemetryDirContext, paths: path.PlatformPath): Choice {
  const name = TELEMETRY_DIR_VARIABLE;
  if (value === '') return problem(`${name} is set but empty; unset it to use the default`);
  if (/^~[^/\\]/.test(value)) return problem(`${name}=${value}: only \`~\` and \`~/...\` are expanded; write the full path`);
  const why = `${name} is set`;
  if (!value.startsWith('~')) return { dir: paths.resolve(context.cwd, value), why };
  if (context.home === '') return problem(`${name}=${value}: the home directory is unknown; write the full path`);
  return { dir: paths.join(context.home, value.slice(1)), why };
}

/**
 * The per-user state dir of an installed package:
 * - Linux and other Unixes: `$XDG_STATE_HOME/ollama-runner-mcp`, else `~/.local/state/...` (the XDG
 *   spec's place for state kept across restarts; a relative XDG_STATE_HOME is ignored, as it says).
 * - macOS: `~/Library/Application Support/...`, whatever XDG_STATE_HOME says: clients launched from
 *   the Dock do not see a shell's variables, so honouring it would split the data between two dirs
 *   (not Caches/, which the system may purge, nor Logs/: the retry ledger is not a log).
 * - Windows: `%LOCALAPPDATA%\...` (Local, not Roaming: the lock and the ledger belong to this machine).
 */
function userStateDir(context: TelemetryDirContext, paths: path.PlatformPath): Choice {
  const installed = (dir: string, where: string): TelemetryDirChoice => ({
    dir: paths.join(dir, APP_DIR_NAME),
    why: `installed package: the per-user state dir ${where}`,
  });
  const home = (...parts: string[]) => paths.join(context.home, ...parts);
  if (context.platform === 'win32') {
    const localAppData = context.env.LOCALAPPDATA?.trim();
    if (localAppData && paths.isAbsolute(localAppData)) return installed(localAppData, 'under %LOCALAPPDATA%');
  } else if (context.platform !== 'darwin') {
    const xdgStateHome = context.env.XDG_STATE_HOME?.trim();
    if (xdgStateHome && paths.isAbsolute(xdgStateHome)) return installed(xdgStateHome, 'under $XDG_STATE_HOME');
  }
  if (context.home === '') {
    return problem(
      `cannot choose a telemetry dir: the home directory is unknown; set ${TELEMETRY_DIR_VARIABLE} to a writable folder`,
    );
  }
  if (context.platform === 'win32') {
    return installed(home('AppData', 'Local'), 'in AppData\\Local, as %LOCALAPPDATA% is unset');
  }
  if (context.platform === 'darwin') {
    return installed(home('Library', 'Application Support'), 'of macOS, in ~/Library/Application Support');
  }
  const unusable = context.env.XDG_STATE_HOME?.trim() ? 'is not an absolute path' : 'is unset';
  return installed(home('.local', 'state'), `in ~/.local/state, as XDG_STATE_HOME ${unusable}`);
}

export function isTelemetryDirProblem(value: Choice): value is TelemetryDirProblem {
  return (value as TelemetryDirProblem).kind === 'telemetry_dir_problem';
}

function problem(message: string): TelemetryDirProblem {
  return { kind: 'telemetry_dir_problem', variable: TELEMETRY_DIR_VARIABLE, message };
}

/**
 * Whether `packageRoot` is a source checkout, and by what sign: `.git`, or `src/cli.ts` with
 * `tsconfig.json` (an unpacked archive); never inside `node_modules` (the published package ships dist/ only).
 */
export function detectSourceCheckout(packageRoot: string, exists: (file: string) => boolean = existsSync): string | null {
  if (packageRoot.split(/[/\\]/).includes('node_modules')) return null;
  if (exists(path.join(packageRoot, '.git'))) return `${packageRoot} has .git`;
  if (exists(path.join(packageRoot, 'src', 'cli.ts')) && exists(path.join(packageRoot, 'tsconfig.json'))) {
    return `${packageRoot} has src/ and tsconfig.json`;
  }
  return null;
}

/** The package's root: the parent of dist/ (built) or src/ (tests), where package.json is. */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The context of this process (reads the file system to detect a checkout). */
export function currentTelemetryDirContext(env: TelemetryDirContext['env'] = process.env): TelemetryDirContext {
  let home = '';
  try {
    home = os.homedir();
  } catch {
    // No HOME and no passwd entry: only OLLAMA_MCP_TELEMETRY_DIR can say where the data goes.
  }
  return {
    env,
    platform: process.platform,
    home,
    cwd: process.cwd(),
    packageRoot: PACKAGE_ROOT,
    sourceCheckout: detectSourceCheckout(PACKAGE_ROOT),
  };
}

/** The telemetry dir cannot be created or written: start-up stops with this one line. */
export class TelemetryDirError extends Error {
  readonly kind = 'telemetry_dir_error';
  constructor(
    readonly dir: string,
    readonly reason: string,
  ) {
    super(
      `cannot use the telemetry dir ${dir} (${reason}): runs.jsonl and the retry ledger are kept there. ` +
        `Make it writable, or set ${TELEMETRY_DIR_VARIABLE} to a writable folder.`,
    );
    this.name = 'TelemetryDirError';
  }
}

/**
 * Create the telemetry dir (0700; an existing dir keeps its mode) and prove it writable with a probe
 * file: a server that cannot save its ledger must not start and fail every run later.
 */
export async function prepareTelemetryDir(dir: string): Promise<void> {
  const probe = path.join(dir, `.write-probe-${process.pid}`);
  try {
    ensureDirSync(dir);
    const handle = await open(probe, 'wx', 0o600);
    await handle.close();
    await rm(probe, { force: true });
  } catch (error) {
    throw new TelemetryDirError(dir, error instanceof Error ? error.message : String(error));
  }
}

export function isTelemetryDirError(error: unknown): error is TelemetryDirError {
  return typeof error === 'object' && error !== null && (error as { kind?: unknown }).kind === 'telemetry_dir_error';
}

/** The telemetry dir and the folders in it: only their owner may read them (the log may hold prompts). */
const DIR_MODE = 0o700;

/**
 * `mkdir -p` (new folders 0700) that names the real cause: where Node's says ENOENT (a parent that
 * cannot be created), the first missing one is created alone to get its own error (EROFS, EACCES...).
 */
export function ensureDirSync(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    let missing = dir;
    while (path.dirname(missing) !== missing && !existsSync(path.dirname(missing))) missing = path.dirname(missing);
    mkdirSync(missing, { mode: DIR_MODE }); // throws the telling error
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  }
}
