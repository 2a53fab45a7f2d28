import { describeCliFailure, runCliCommand, withDeadline, type CliCommandResult, type CliFailureCause } from './cli-command.js';
import { isUnreachableMessage } from './cli-errors.js';
import { InstalledModels, type ModelListResult } from './installed-models.js';
import { terminalText } from './terminal-text.js';

type Env = Readonly<Record<string, string | undefined>>;

interface CliProbeOptions {
  readonly bin: string;
  /** The complete environment of the CLI (include OLLAMA_HOST when configured). */
  readonly env: Env;
  /** Limit for each of `BIN --version` and `BIN list` (they run side by side). @default 5000 */
  readonly timeoutMs?: number;
  /** Ask this one for the model list (its cache is refreshed; a concurrent preflight shares it). @default a private one */
  readonly installedModels?: InstalledModels;
}

export interface CliProbe {
  /** The CLI could be started (a CLI that hangs was found too). */
  readonly found: boolean;
  /** The CLI's own version (see parseVersions); it and every text below the CLI printed go through `terminalText`. */
  readonly version: string | null;
  /** The server's version, from `ollama version is X`; `null` when the server did not answer. */
  readonly serverVersion: string | null;
  /** `true`: `BIN list` worked; `false`: the CLI says it cannot connect; `null`: cannot tell. */
  readonly serverReachable: boolean | null;
  /** `Warning: ...` lines the CLI printed (client/server version mismatch, server not running). */
  readonly warnings: string[];
  /** The first thing that went wrong, as a sentence; `null` when both commands worked. */
  readonly error: string | null;
  /** Why `error` happened, when it did. */
  readonly errorCause: CliFailureCause | null;
  /** Canonical names of the installed models, when `BIN list` worked. */
  readonly installed: string[] | null;
  /** Wall time of the whole probe. */
  readonly latencyMs: number;
}

/**
 * The versions `ollama --version` printed: the server's (`ollama version is X`) and the CLI's own
 * (`Warning: client version is Y`, printed when they differ or the server is down; else the server's).
 */
export function parseVersions(output: string): { server: string | null; client: string | null } {
  const server = /ollama version is\s+v?([0-9][^\s]*)/i.exec(output)?.[1] ?? null;
  const client = /client version is\s+v?([0-9][^\s]*)/i.exec(output)?.[1] ?? null;
  return { server, client: client ?? server };
}

function warningLines(...outputs: string[]): string[] {
  return outputs
    .flatMap((text) => text.split(/\r?\n/))
    .map((line) => line.trim())
    .filter((line) => /^Warning:/i.test(line))
    .map((line) => line.replace(/^Warning:\s*/i, ''));
}

/** Is the CLI there, which version, and can it reach the server? `BIN --version` and `BIN list` side by side; never throws. */
export async function probeCli(options: CliProbeOptions): Promise<CliProbe> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 5_000;
  const models = options.installedModels ?? new InstalledModels({ bin: options.bin, env: options.env, ttlMs: 0, timeoutMs });
  try {
    const [version, list] = await Promise.all([
      runCliCommand({ bin: options.bin, args: VERSION_ARGS, env: options.env, timeoutMs }),
      withDeadline(models.refresh(), timeoutMs + 1_500, () => ({
        ok: false as const,
        cause: 'timeout' as const,
        reason: `\`${options.bin} list\` did not answer within ${timeoutMs} ms`,
        fetchedAt: 0,
      })),
    ]);
    return { ...readProbe(options.bin, timeoutMs, version, list), latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    return {
      found: false,
      version: null,
      serverVersion: null,
      serverReachable: null,
      warnings: [],
      error: `probing \`${options.bin}\` failed: ${(error as Error).message}`,
      errorCause: 'error',
      installed: null,
      latencyMs: Math.round(performance.now() - started),
    };
  }
}

const VERSION_ARGS = ['--version'];

/** What `BIN --version` and `BIN list` together say of the CLI and the server. */
function readProbe(
  bin: string,
  timeoutMs: number,
  version: CliCommandResult,
  list: ModelListResult,
): Omit<CliProbe, 'latencyMs'> {
  const versionOk = version.spawnError === null && !version.timedOut && version.exitCode === 0;
  const versionFailure = versionOk ? null : describeCliFailure(bin, VERSION_ARGS, version, timeoutMs);
  const listFailure = list.ok ? null : list;
  const warnings = warningLines(version.stdout, version.stderr);
  const found = versionFailure?.cause !== 'cli_not_found' && listFailure?.cause !== 'cli_not_found';
  let serverReachable: boolean | null = null;
  if (list.ok) serverReachable = true;
  else if (list.cause === 'unreachable' || warnings.some(isUnreachableMessage)) serverReachable = false;
  // Not found: the failure that says so; else the list's failure first, then the version's.
  const failure = versionFailure?.cause === 'cli_not_found' ? versionFailure : (listFailure ?? versionFailure);
  const versions = parseVersions(`${version.stdout}\n${version.stderr}`);
  // What the CLI printed (and a remote server told it) reaches doctor's terminal: shown, never obeyed.
  const shown = (text: string | null) => (text === null ? null : terminalText(text));
  return {
    found,
    version: shown(versions.client),
    serverVersion: shown(versions.server),
    serverReachable,
    warnings: warnings.map(terminalText),
    error: shown(failure?.reason ?? null),
    errorCause: failure?.cause ?? null,
    installed: list.ok ? [...list.models] : null,
  };
}
