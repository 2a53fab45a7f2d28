import { loadExeca } from './load-execa.js';
import { spawnErrorMessage } from './cli-errors.js';

export interface ModelProcessRequest {
  readonly bin: string;
  readonly args: readonly string[];
  /** Written to stdin, which is then closed: the CLI reads stdin to EOF before it starts. */
  readonly prompt: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly timeoutMs: number;
  /** After SIGTERM (timeout, cancel, output cap), SIGKILL follows this much later. */
  readonly killGraceMs: number;
  /** stdout bytes kept; past this the process is stopped and the output marked truncated. */
  readonly maxOutputBytes: number;
  /** Aborting it kills the process (client cancelled, server shutting down). */
  readonly signal?: AbortSignal;
  /** Called with the number of stdout bytes received so far, as they arrive. */
  readonly onOutput?: (bytesSoFar: number) => void;
}

/** How the CLI process ended. Success and every failure share this one shape. */
export interface ProcessOutcome {
  readonly stdout: string;
  /** The last few KiB of stderr (the spinner can fill it; the error line is at the end). */
  readonly stderrTail: string;
  readonly exitCode: number | null;
  /** Signal that ended the process, if any. */
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly truncated: boolean;
  readonly cancelled: boolean;
  /** Set when the CLI could not be started at all (not found, not executable). */
  readonly spawnError: string | null;
  readonly durationMs: number;
  readonly pid: number | null;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
}

const STDERR_TAIL_BYTES = 16 * 1024;

/** Model processes still running: killed if this process exits, so none outlives the server. */
const liveProcesses = new Set<{ kill(signal: NodeJS.Signals): boolean }>();
let exitHookInstalled = false;

function killOnExit(child: { kill(signal: NodeJS.Signals): boolean }): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Synchronous 'exit' (also after an uncaught error or process.exit): nothing can wait for a
    // grace period any more, so SIGKILL.
    process.on('exit', () => {
      for (const live of liveProcesses) live.kill('SIGKILL');
    });
  }
  liveProcesses.add(child);
}

/**
 * Run the CLI once: no shell, prompt on stdin, hard timeout (SIGTERM, then SIGKILL after the
 * grace; never SIGINT, which makes the CLI exit 0 with partial output), bounded capture.
 * Never rejects: every ending is described by the returned outcome.
 */
export async function runModelProcess(request: ModelProcessRequest): Promise<ProcessOutcome> {
  const started = performance.now();
  const stdoutChunks: Buffer[] = [];
  let stdoutBytes = 0;
  let truncated = false;
  let stderrTail = Buffer.alloc(0);

  const { execa } = await loadExeca();
  const subprocess = execa(request.bin, request.args, {
    // Lean options, measured on the hot path (paired with child_process.spawn): the prompt is
    // written to the stdin pipe below instead of `input` (which builds a stream pipeline), and
    // `cleanup` (signal-exit hooks added and removed on every spawn) is replaced by one exit hook.
    // The timeout and the cancel signal are a plain timer and listener below, not execa's
    // `timeout`/`cancelSignal` (each an abortable promise plus an AbortError per run, ~0.1-0.2 ms);
    // `kill()` still gets execa's SIGKILL after `forceKillAfterDelay`.
    stdin: 'pipe',
    cleanup: false,
    buffer: false,
    reject: false,
    env: request.env,
    extendEnv: false,
    killSignal: 'SIGTERM',
    forceKillAfterDelay: request.killGraceMs,
    windowsHide: true,
  });
  killOnExit(subprocess);
  let stoppedBy: 'timeout' | 'cancel' | null = null;
  const stop = (reason: 'timeout' | 'cancel') => {
    if (stoppedBy !== null) return;
    stoppedBy = reason;
    subprocess.kill();
  };
  const timer = setTimeout(stop, request.timeoutMs, 'timeout');
  const onAbort = () => stop('cancel');
  if (request.signal?.aborted) onAbort();
  else request.signal?.addEventListener('abort', onAbort, { once: true });
  // Written whole, then closed: the CLI reads stdin to EOF before it starts. A CLI that exits
  // before reading it makes this EPIPE, which execa ignores (the exit code tells what happened).
  subprocess.stdin?.end(request.prompt);

  subprocess.stdout?.on('data', (chunk: Buffer) => {
    if (truncated) return;
    const room = request.maxOutputBytes - stdoutBytes;
    if (chunk.length > room) {
      stdoutChunks.push(chunk.subarray(0, room));
      stdoutBytes += room;
      truncated = true;
      subprocess.kill('SIGTERM');
    } else {
      stdoutChunks.push(chunk);
      stdoutBytes += chunk.length;
    }
    request.onOutput?.(stdoutBytes);
  });
  subprocess.stderr?.on('data', (chunk: Buffer) => {
    const joined = Buffer.concat([stderrTail, chunk]);
    stderrTail = joined.length > STDERR_TAIL_BYTES ? joined.subarray(joined.length - STDERR_TAIL_BYTES) : joined;
  });

  const result = await subprocess.finally(() => {
    liveProcesses.delete(subprocess);
    clearTimeout(timer);
    request.signal?.removeEventListener('abort', onAbort);
  });
  const spawnFailed = result.failed && result.exitCode === undefined && stoppedBy === null && !result.signal;
  return {
    stdout: decodeUtf8Prefix(stdoutChunks.length === 1 ? stdoutChunks[0]! : Buffer.concat(stdoutChunks, stdoutBytes)),
    stderrTail: stderrTail.toString('utf8'),
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    timedOut: stoppedBy === 'timeout',
    truncated,
    cancelled: stoppedBy === 'cancel',
    spawnError: spawnFailed ? spawnErrorMessage(request.bin, (result as { code?: string }).code ?? null, result.message) : null,
    durationMs: Math.round(performance.now() - started),
    pid: subprocess.pid ?? null,
    timeoutMs: request.timeoutMs,
    maxOutputBytes: request.maxOutputBytes,
  };
}

/** Decode, dropping a multi-byte character cut in half by the output cap. */
function decodeUtf8Prefix(bytes: Buffer): string {
  return bytes.toString('utf8').replace(/\uFFFD$/, '');
}
