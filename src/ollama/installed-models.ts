import { execa } from 'execa';
import { canonicalModelName, MODEL_NAME_PATTERN } from './model-name.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A repeated miss refreshes the list at most this often (a model pulled since must still be found). */
export const MIN_REFRESH_INTERVAL_MS = 2_000;
/** After SIGTERM on a timed-out command, SIGKILL follows this much later. */
const KILL_GRACE_MS = 1_000;
/** Past timeout + grace + this, we stop waiting even if a grandchild still holds the pipes open. */
const ABANDON_MARGIN_MS = 500;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// One bounded, shell-free CLI command
// ---------------------------------------------------------------------------------------------

/** Why a CLI command did not give a usable answer. */
export type CliFailureCause = 'cli_not_found' | 'unreachable' | 'timeout' | 'error';

export interface CliCommandResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Set when the CLI could not be started at all (not found, not executable). */
  readonly spawnError: string | null;
  readonly spawnErrorCode: string | null;
  readonly durationMs: number;
}

export interface CliCommandRequest {
  readonly bin: string;
  readonly args: readonly string[];
  /** The complete environment of the child (it is not merged with process.env). */
  readonly env: Env;
  readonly timeoutMs: number;
}

/**
 * Run `BIN ARGS...` once: no shell, stdin closed (the CLI reads stdin to EOF when it is a pipe),
 * SIGTERM at the timeout and SIGKILL a second later. Never rejects, and never waits much past
 * the timeout, even when a grandchild keeps the output pipes open.
 */
export async function runCliCommand(request: CliCommandRequest): Promise<CliCommandResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let subprocess;
  try {
    subprocess = execa(request.bin, [...request.args], {
      stdin: 'ignore',
      reject: false,
      env: { ...request.env },
      extendEnv: false,
      timeout: request.timeoutMs,
      killSignal: 'SIGTERM',
      forceKillAfterDelay: KILL_GRACE_MS,
      maxBuffer: MAX_OUTPUT_BYTES,
      stripFinalNewline: false,
      windowsHide: true,
    });
  } catch (error) {
    // execa validates its options synchronously; treat anything thrown here as "cannot run".
    return {
      stdout: '',
      stderr: '',
      exitCode: null,
      timedOut: false,
      spawnError: `cannot run \`${request.bin}\`: ${(error as Error).message}`,
      spawnErrorCode: null,
      durationMs: elapsed(),
    };
  }
  const child = subprocess;
  let abandonTimer: NodeJS.Timeout | undefined;
  const abandoned = new Promise<'abandoned'>((resolve) => {
    abandonTimer = setTimeout(() => resolve('abandoned'), request.timeoutMs + KILL_GRACE_MS + ABANDON_MARGIN_MS);
    abandonTimer.unref?.();
  });
  try {
    const result = await Promise.race([child, abandoned]);
    if (result === 'abandoned') {
      child.kill('SIGKILL');
      child.stdout?.destroy();
      child.stderr?.destroy();
      void Promise.resolve(child).catch(() => {});
      return {
        stdout: '',
        stderr: '',
        exitCode: null,
        timedOut: true,
        spawnError: null,
        spawnErrorCode: null,
        durationMs: elapsed(),
      };
    }
    const stdout = typeof result.stdout === 'string' ? result.stdout : '';
    const stderr = typeof result.stderr === 'string' ? result.stderr : '';
    const spawnFailed =
      result.failed && result.exitCode === undefined && !result.timedOut && !result.signal && !result.isMaxBuffer;
    const code = (result as { code?: string }).code ?? null;
    return {
      stdout,
      stderr,
      exitCode: result.exitCode ?? null,
      timedOut: result.timedOut,
      spawnError: spawnFailed ? spawnErrorMessage(request.bin, code, result.message) : null,
      spawnErrorCode: spawnFailed ? code : null,
      durationMs: elapsed(),
    };
  } finally {
    clearTimeout(abandonTimer);
  }
}

function spawnErrorMessage(bin: string, code: string | null, message: string | undefined): string {
  switch (code) {
    case 'ENOENT':
      return `cannot run \`${bin}\`: not found (install Ollama, or set OLLAMA_BIN to the CLI's path)`;
    case 'EACCES':
      return `cannot run \`${bin}\`: permission denied (is it executable?)`;
    default:
      return `cannot run \`${bin}\`: ${code ?? message ?? 'unknown error'}`;
  }
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-_]/g;
const SPINNER = /^[\u2800-\u28ff]\s*/;

/** The last meaningful line of an error output, without escapes, spinner frames or the `Error: ` prefix. */
export function lastErrorLine(text: string): string | null {
  const lines = text
    .replace(ANSI, '\n')
    .split(/\r?\n|\r/)
    .map((line) => line.replace(SPINNER, '').trim())
    .filter((line) => line !== '');
  const errorLine = [...lines].reverse().find((line) => line.startsWith('Error:')) ?? lines.at(-1);
  return errorLine === undefined ? null : errorLine.replace(/^Error:\s*/, '');
}

/**
 * The server-down message of every CLI version (`could not connect to ollama ...`), a refused
 * connection, or the raw error of a remote OLLAMA_HOST that cannot be reached
 * (`Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host`).
 */
export function isUnreachableMessage(text: string): boolean {
  return /could not connect to (?:ollama|a running ollama)|connection refused|(?:Head|Get|Post) "https?:\/\/[^"]*": dial tcp/i.test(
    text,
  );
}

/** Why a failed command failed, and a sentence for a human. */
export function describeCliFailure(
  bin: string,
  args: readonly string[],
  result: CliCommandResult,
  timeoutMs: number,
): { cause: CliFailureCause; reason: string } {
  if (result.spawnError !== null) {
    const notFound = result.spawnErrorCode === 'ENOENT' || result.spawnErrorCode === 'EACCES';
    return { cause: notFound ? 'cli_not_found' : 'error', reason: result.spawnError };
  }
  const command = `\`${[bin, ...args].join(' ')}\``;
  if (result.timedOut) return { cause: 'timeout', reason: `${command} did not answer within ${timeoutMs} ms and was killed` };
  const line = lastErrorLine(result.stderr) ?? lastErrorLine(result.stdout);
  if (line !== null && isUnreachableMessage(line)) return { cause: 'unreachable', reason: line };
  return {
    cause: 'error',
    reason: `${command} failed (exit code ${result.exitCode ?? 'none'})${line ? `: ${line}` : ''}`,
  };
}

// ---------------------------------------------------------------------------------------------
// `ollama list`
// ---------------------------------------------------------------------------------------------

/**
 * The model names of an `ollama list` table, as printed (`NAME  ID  SIZE  MODIFIED`, header first;
 * each column padded to its longest cell plus 4 spaces, trailing spaces included; the name is the
 * first column). Names may carry a registry host and port (`localhost:5000/team/model:v1`) or start
 * with `_`. Lines that do not start with a model name are skipped.
 */
export function parseModelList(stdout: string): string[] {
  const lines = stdout.split(/\r?\n/).map((line) => line.trim());
  const header = lines.findIndex((line) => /^NAME(?:\s|$)/.test(line));
  const rows = header === -1 ? lines : lines.slice(header + 1);
  const names: string[] = [];
  for (const row of rows) {
    const name = row.split(/\s+/, 1)[0] ?? '';
    if (name !== '' && MODEL_NAME_PATTERN.test(name)) names.push(name);
  }
  return names;
}

export type ModelListResult =
  | {
      readonly ok: true;
      /** Canonical names (`llama3.2:latest`), in the CLI's order, without duplicates. */
      readonly models: readonly string[];
      /** When the `ollama list` that produced it started (the options' clock). */
      readonly fetchedAt: number;
    }
  | {
      readonly ok: false;
      readonly cause: CliFailureCause;
      /** What went wrong: the connect error, the not-found message, the timeout. */
      readonly reason: string;
      readonly fetchedAt: number;
    };

/** Is this model installed? `unknown` means the list itself could not be read: do not act on it. */
export type ModelCheck =
  | { readonly kind: 'installed' }
  | { readonly kind: 'missing'; readonly installed: string[] }
  | { readonly kind: 'unknown'; readonly reason: string; readonly cause: CliFailureCause };

export interface InstalledModelsOptions {
  readonly bin: string;
  /** The complete environment of the CLI (include OLLAMA_HOST when configured). */
  readonly env: Env;
  /** How long a successful list is trusted. 0: every call asks the CLI (concurrent calls still share one). */
  readonly ttlMs: number;
  /** Epoch ms. @default Date.now */
  readonly clock?: () => number;
  /** Limit for one `ollama list`. @default 10000 */
  readonly timeoutMs?: number;
}

/**
 * The models installed on the Ollama server, from `ollama list`, cached for `ttlMs`. Concurrent
 * callers share one in-flight `ollama list`. A failed list is remembered only briefly
 * (MIN_REFRESH_INTERVAL_MS), so a server that comes back is noticed.
 */
export class InstalledModels {
  readonly bin: string;
  readonly env: Env;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  readonly #clock: () => number;
  #cached: ModelListResult | null = null;
  #inFlight: Promise<ModelListResult> | null = null;
  /** Clock time at which the last `ollama list` was spawned. */
  #lastSpawnAt = Number.NEGATIVE_INFINITY;

  constructor(options: InstalledModelsOptions) {
    this.bin = options.bin;
    this.env = options.env;
    this.ttlMs = Math.max(0, options.ttlMs);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.#clock = options.clock ?? Date.now;
  }

  /** The list: from the cache while it is fresh, else from one (shared) `ollama list`. */
  async list(): Promise<ModelListResult> {
    return (await this.#get(false)).result;
  }

  /** A new `ollama list` (or the one already running), whatever the cache holds. */
  async refresh(): Promise<ModelListResult> {
    return (await this.#get(true)).result;
  }

  /** The last list obtained, without asking the CLI. */
  get cached(): ModelListResult | null {
    return this.#cached;
  }

  /**
   * Is `model` installed (`llama3.2` = `llama3.2:latest` = `library/llama3.2:latest`)?
   * A miss against a cached list asks the CLI again once (the model may have been pulled since),
   * but not more often than every MIN_REFRESH_INTERVAL_MS.
   */
  async check(model: string): Promise<ModelCheck> {
    const wanted = canonicalModelName(model);
    let { result, fresh } = await this.#get(false);
    if (result.ok && !result.models.includes(wanted) && !fresh && this.#clock() - this.#lastSpawnAt >= MIN_REFRESH_INTERVAL_MS) {
      result = (await this.#get(true)).result;
    }
    if (!result.ok) return { kind: 'unknown', reason: result.reason, cause: result.cause };
    return result.models.includes(wanted) ? { kind: 'installed' } : { kind: 'missing', installed: [...result.models] };
  }

  /** `fresh`: the result comes from an `ollama list` this call waited for, not from the cache. */
  async #get(force: boolean): Promise<{ result: ModelListResult; fresh: boolean }> {
    if (this.#inFlight) return { result: await this.#inFlight, fresh: true };
    const cached = this.#cached;
    if (!force && cached && this.#clock() - cached.fetchedAt < this.#trustMs(cached)) return { result: cached, fresh: false };
    const fetching = this.#fetch();
    this.#inFlight = fetching;
    try {
      return { result: await fetching, fresh: true };
    } finally {
      if (this.#inFlight === fetching) this.#inFlight = null;
    }
  }

  #trustMs(result: ModelListResult): number {
    return result.ok ? this.ttlMs : Math.min(this.ttlMs, MIN_REFRESH_INTERVAL_MS);
  }

  async #fetch(): Promise<ModelListResult> {
    const fetchedAt = this.#clock();
    this.#lastSpawnAt = fetchedAt;
    const args = ['list'];
    const outcome = await runCliCommand({ bin: this.bin, args, env: this.env, timeoutMs: this.timeoutMs });
    let result: ModelListResult;
    if (outcome.spawnError === null && !outcome.timedOut && outcome.exitCode === 0) {
      const models = [...new Set(parseModelList(outcome.stdout).map(canonicalModelName))];
      result = { ok: true, models, fetchedAt };
    } else {
      const { cause, reason } = describeCliFailure(this.bin, args, outcome, this.timeoutMs);
      result = { ok: false, cause, reason, fetchedAt };
    }
    this.#cached = result;
    return result;
  }
}
