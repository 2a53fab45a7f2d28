import { loadExeca } from './load-execa.js';
import { lastErrorLine, isUnreachableMessage, spawnErrorMessage } from './cli-errors.js';

type Env = Readonly<Record<string, string | undefined>>;

/** After SIGTERM on a timed-out command, SIGKILL follows this much later. */
const KILL_GRACE_MS = 1_000;
/** Past timeout + grace + this, we stop waiting even if a grandchild still holds the pipes open. */
const ABANDON_MARGIN_MS = 500;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

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
}

export interface CliCommandRequest {
  readonly bin: string;
  readonly args: readonly string[];
  /** The complete environment of the child (it is not merged with process.env). */
  readonly env: Env;
  readonly timeoutMs: number;
}

const NO_RESULT = { stdout: '', stderr: '', exitCode: null, timedOut: false, spawnError: null, spawnErrorCode: null } as const;

/**
 * Run `BIN ARGS...` once: no shell, stdin closed (the CLI reads stdin to EOF when it is a pipe),
 * SIGTERM at the timeout and SIGKILL a second later. Never rejects, and never waits much past
 * the timeout, even when a grandchild keeps the output pipes open.
 */
export async function runCliCommand(request: CliCommandRequest): Promise<CliCommandResult> {
  const { execa } = await loadExeca();
  let child;
  try {
    child = execa(request.bin, [...request.args], {
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
    return { ...NO_RESULT, spawnError: `cannot run \`${request.bin}\`: ${(error as Error).message}` };
  }
  const result = await withDeadline<Awaited<typeof child> | null>(
    child,
    request.timeoutMs + KILL_GRACE_MS + ABANDON_MARGIN_MS,
    () => null,
  );
  if (result === null) {
    // A grandchild still holds the pipes open: stop waiting for it.
    child.kill('SIGKILL');
    child.stdout?.destroy();
    child.stderr?.destroy();
    void Promise.resolve(child).catch(() => {});
    return { ...NO_RESULT, timedOut: true };
  }
  const spawnFailed = result.failed && result.exitCode === undefined && !result.timedOut && !result.signal && !result.isMaxBuffer;
  const code = (result as { code?: string }).code ?? null;
  return {
    stdout: typeof result.stdout === 'string' ? result.stdout : '',
    stderr: typeof result.stderr === 'string' ? result.stderr : '',
    exitCode: result.exitCode ?? null,
    timedOut: result.timedOut,
    spawnError: spawnFailed ? spawnErrorMessage(request.bin, code, result.message) : null,
    spawnErrorCode: spawnFailed ? code : null,
  };
}

/** `promise`, or `fallback()` if it has not settled after `ms`. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback()), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
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
