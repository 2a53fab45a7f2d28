import { cannotExecute, isResourceSpawnError, lastErrorLine, isUnreachableMessage, spawnErrorOf } from './cli-errors.js';
import { DRAIN_MAX_MS, spawnFailureOf, untilExitAndDrained } from './process-end.js';
import { startProcess, type Subprocess } from './start-process.js';

type Env = Readonly<Record<string, string | undefined>>;

/** After SIGTERM on a timed-out command, SIGKILL follows this much later. */
const KILL_GRACE_MS = 1_000;
/** Past timeout + grace + drain + this, the command is given up even if its process never ends. */
const ABANDON_MARGIN_MS = 500;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * Why a CLI command did not give a usable answer. `spawn_failed`: the machine could not start the
 * CLI just now (too many open files or processes, no memory); `cli_not_found`: it cannot be executed.
 */
export type CliFailureCause = 'cli_not_found' | 'spawn_failed' | 'unreachable' | 'timeout' | 'error';

export interface CliCommandResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Set when the CLI could not be started at all (not found, not executable, no descriptors or processes left). */
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
 * Run `BIN ARGS...` once: no shell, stdin closed (the CLI reads a piped stdin to EOF), SIGTERM at the
 * timeout and SIGKILL a second later. Ends when the CLI exits (plus a short drain), whoever else
 * holds its pipes. Never rejects.
 */
export async function runCliCommand(request: CliCommandRequest): Promise<CliCommandResult> {
  const start = await startProcess(request.bin, request.args, {
    stdin: 'ignore',
    buffer: false,
    reject: false,
    env: { ...request.env },
    extendEnv: false,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: KILL_GRACE_MS,
    windowsHide: true,
  });
  if ('failure' in start) return { ...NO_RESULT, ...spawnErrorOf(request.bin, start.failure) };
  const { subprocess } = start;
  const output = new CommandOutput(subprocess);
  let timedOut = false;
  // execa's kill() sends SIGKILL KILL_GRACE_MS after this SIGTERM if the CLI is still there.
  const timer = setTimeout(() => {
    timedOut = true;
    subprocess.kill('SIGTERM');
  }, request.timeoutMs);
  const drained = untilExitAndDrained(subprocess, () => output.lastData);
  const end = await withDeadline(drained, request.timeoutMs + KILL_GRACE_MS + DRAIN_MAX_MS + ABANDON_MARGIN_MS, () => null);
  clearTimeout(timer);
  if (end === null) {
    // The process never ended, even after SIGKILL (a zombie no one reaps, a stuck mount): stop waiting for it.
    subprocess.kill('SIGKILL');
    subprocess.stdout?.destroy();
    subprocess.stderr?.destroy();
    return { ...NO_RESULT, timedOut: true };
  }
  return {
    stdout: output.text('stdout'),
    stderr: output.text('stderr'),
    exitCode: end.exitCode,
    timedOut,
    ...spawnErrorOf(request.bin, spawnFailureOf(end, timedOut)),
  };
}

/** A command's stdout and stderr as they arrive, together kept up to MAX_OUTPUT_BYTES. */
class CommandOutput {
  readonly #parts = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  #bytes = 0;
  lastData = performance.now();

  constructor(subprocess: Subprocess) {
    subprocess.stdout?.on('data', (chunk: Buffer) => this.#keep('stdout', chunk));
    subprocess.stderr?.on('data', (chunk: Buffer) => this.#keep('stderr', chunk));
  }

  text(stream: 'stdout' | 'stderr'): string {
    return Buffer.concat(this.#parts[stream]).toString('utf8');
  }

  #keep(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this.lastData = performance.now();
    const room = MAX_OUTPUT_BYTES - this.#bytes;
    if (room <= 0) return;
    this.#parts[stream].push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    this.#bytes += Math.min(room, chunk.length);
  }
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
    const code = result.spawnErrorCode;
    const cause = isResourceSpawnError(code) ? 'spawn_failed' : cannotExecute(code) ? 'cli_not_found' : 'error';
    return { cause, reason: result.spawnError };
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
