import { loadExeca } from './load-execa.js';
import { spawnErrorMessage } from './cli-errors.js';
import { GroupTerminator, OWN_PROCESS_GROUP, signalGroup } from './process-group.js';

export interface ModelProcessRequest {
  readonly bin: string;
  readonly args: readonly string[];
  /** Written to stdin, which is then closed: the CLI reads stdin to EOF before it starts. */
  readonly prompt: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Limit of the answer, counted from its first byte on stdout. */
  readonly timeoutMs: number;
  /**
   * Limit of the wait for that first byte: the CLI is queued in Ollama, the model loads or the prompt
   * is read, and stdout stays silent meanwhile.
   */
  readonly startTimeoutMs: number;
  /** Limit of the whole process from spawn (the call's deadline); none when undefined. */
  readonly deadlineMs?: number;
  /** After SIGTERM (timeout, cancel, output cap), SIGKILL follows this much later. */
  readonly killGraceMs: number;
  /** stdout bytes kept; past this the process is stopped and the output marked truncated. */
  readonly maxOutputBytes: number;
  /** Aborting it kills the process (client cancelled, server shutting down). */
  readonly signal?: AbortSignal;
  /** Called with the number of stdout bytes received so far, as they arrive. */
  readonly onOutput?: (bytesSoFar: number) => void;
  /** Called once, when the first byte of answer arrives: the model has begun to generate. */
  readonly onFirstByte?: () => void;
  /** Called once the process has started, with its pid (not called when it could not be started). */
  readonly onSpawn?: (pid: number) => void;
}

/** How the CLI process ended. Success and every failure share this one shape. */
export interface ProcessOutcome {
  readonly stdout: string;
  /** The last few KiB of stderr (the spinner can fill it; the error line is at the end). */
  readonly stderrTail: string;
  readonly exitCode: number | null;
  /** Signal that ended the process, if any. */
  readonly signal: string | null;
  /** The answer had begun and passed `timeoutMs` (or the deadline): the process was stopped. */
  readonly timedOut: boolean;
  /** No answer began within `startTimeoutMs` (or before the deadline): the process was stopped. */
  readonly startTimedOut: boolean;
  /** The call's deadline, not the run's own limit, is what stopped it (with `timedOut` or `startTimedOut`). */
  readonly deadlineReached: boolean;
  readonly truncated: boolean;
  readonly cancelled: boolean;
  /** Set when the CLI could not be started at all (not found, not executable). */
  readonly spawnError: string | null;
  readonly durationMs: number;
  /** Spawn to the first byte of answer; null when none came. */
  readonly startMs: number | null;
  readonly pid: number | null;
  readonly timeoutMs: number;
  readonly startTimeoutMs: number;
  readonly maxOutputBytes: number;
}

const STDERR_TAIL_BYTES = 16 * 1024;
/**
 * Once the CLI has exited, its output is read until its pipes close, or until they have been quiet
 * this long: a helper the CLI started (an `OLLAMA_BIN` wrapper's `ollama serve`, an ssh master) may
 * hold them open for good, and the attempt ends with the CLI, not with the helper.
 */
const DRAIN_QUIET_MS = 250;
/** However much a helper keeps writing into the pipes, the attempt ends this long after the CLI's exit. */
const DRAIN_MAX_MS = 2_000;

/** Model processes (group leaders) still running: their groups are killed if this process exits, so none outlives the server. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killOnExit(pid: number): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Synchronous 'exit' (also after an uncaught error or process.exit): nothing can wait for a
    // grace period any more, so SIGKILL.
    process.on('exit', () => {
      for (const live of liveGroups) signalGroup(live, 'SIGKILL');
    });
  }
  liveGroups.add(pid);
}

type Ending = 'answer_timeout' | 'start_timeout' | 'deadline' | 'cancel';

/**
 * Run the CLI once: no shell, prompt on stdin, bounded waits (SIGTERM, then SIGKILL after the grace;
 * never SIGINT, which makes the CLI exit 0 with partial output), bounded capture. Two clocks: the
 * start allowance runs until the first byte of answer, then `timeoutMs` bounds the answer; a deadline
 * bounds both. The attempt ends when the CLI exits (plus a short drain), whoever else holds its pipes.
 * Never rejects: every ending is described by the returned outcome.
 */
export async function runModelProcess(request: ModelProcessRequest): Promise<ProcessOutcome> {
  const started = performance.now();
  const stdoutChunks: Buffer[] = [];
  let stdoutBytes = 0;
  let truncated = false;
  let stderrTail = Buffer.alloc(0);
  let startMs: number | null = null;
  let lastData = started;

  const { execa } = await loadExeca();
  const subprocess = execa(request.bin, request.args, {
    // Lean options: the prompt is written to the stdin pipe below instead of `input`, one exit hook
    // replaces `cleanup`, and the limits are plain timers that signal the whole process group
    // (execa's own `timeout`/`cancelSignal` reach the group leader only).
    stdin: 'pipe',
    cleanup: false,
    buffer: false,
    reject: false,
    env: request.env,
    extendEnv: false,
    // Its own process group: the limits, a cancel and shutdown end the whole group (see process-group.ts).
    detached: OWN_PROCESS_GROUP,
    windowsHide: true,
  });
  const pid = subprocess.pid;
  let ending: Ending | null = null;
  const group = pid === undefined ? null : new GroupTerminator(pid, request.killGraceMs);
  const stop = (why: Ending) => {
    ending ??= why;
    group?.terminate();
  };
  const limits = new Limits(request, stop);
  const onAbort = () => stop('cancel');
  if (pid !== undefined) {
    killOnExit(pid);
    limits.start();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    if (request.signal?.aborted) onAbort();
    request.onSpawn?.(pid);
  }
  // Written whole, then closed: the CLI reads stdin to EOF before it starts. A CLI that exits
  // before reading it makes this EPIPE, which execa ignores (the exit code tells what happened).
  subprocess.stdin?.end(request.prompt);

  subprocess.stdout?.on('data', (chunk: Buffer) => {
    lastData = performance.now();
    if (startMs === null) {
      startMs = Math.round(lastData - started);
      limits.answerBegan();
      request.onFirstByte?.();
    }
    if (truncated) return;
    const room = request.maxOutputBytes - stdoutBytes;
    if (chunk.length > room) {
      stdoutChunks.push(chunk.subarray(0, room));
      stdoutBytes += room;
      truncated = true;
      group?.terminate();
    } else {
      stdoutChunks.push(chunk);
      stdoutBytes += chunk.length;
    }
    request.onOutput?.(stdoutBytes);
  });
  subprocess.stderr?.on('data', (chunk: Buffer) => {
    lastData = performance.now();
    const joined = Buffer.concat([stderrTail, chunk]);
    stderrTail = joined.length > STDERR_TAIL_BYTES ? joined.subarray(joined.length - STDERR_TAIL_BYTES) : joined;
  });

  const end = await untilExitAndDrained(subprocess, () => lastData);
  limits.clear();
  request.signal?.removeEventListener('abort', onAbort);
  if (pid !== undefined) liveGroups.delete(pid);
  group?.exited();

  const result = end.result;
  const spawnFailed = result !== null && result.failed && result.exitCode === undefined && ending === null && !result.signal;
  const finalEnding: Ending | null = ending;
  const deadlineReached = finalEnding === 'deadline';
  const beganAnswer = startMs !== null;
  return {
    stdout: decodeUtf8Prefix(stdoutChunks.length === 1 ? stdoutChunks[0]! : Buffer.concat(stdoutChunks, stdoutBytes)),
    stderrTail: stderrTail.toString('utf8'),
    exitCode: end.exitCode,
    signal: end.signal,
    timedOut: finalEnding === 'answer_timeout' || (deadlineReached && beganAnswer),
    startTimedOut: finalEnding === 'start_timeout' || (deadlineReached && !beganAnswer),
    deadlineReached,
    truncated,
    cancelled: finalEnding === 'cancel',
    spawnError: spawnFailed ? spawnErrorMessage(request.bin, (result as { code?: string }).code ?? null, result.message) : null,
    durationMs: Math.round(performance.now() - started),
    startMs,
    pid: pid ?? null,
    timeoutMs: request.timeoutMs,
    startTimeoutMs: request.startTimeoutMs,
    maxOutputBytes: request.maxOutputBytes,
  };
}

/**
 * The two clocks of a run, and the deadline over both: the start allowance until the first byte of
 * answer, then the answer's own limit.
 */
class Limits {
  readonly #request: ModelProcessRequest;
  readonly #stop: (why: Ending) => void;
  #phase: NodeJS.Timeout | undefined;
  #deadline: NodeJS.Timeout | undefined;

  constructor(request: ModelProcessRequest, stop: (why: Ending) => void) {
    this.#request = request;
    this.#stop = stop;
  }

  start(): void {
    this.#phase = setTimeout(() => this.#stop('start_timeout'), this.#request.startTimeoutMs);
    const { deadlineMs } = this.#request;
    if (deadlineMs !== undefined) this.#deadline = setTimeout(() => this.#stop('deadline'), deadlineMs);
  }

  answerBegan(): void {
    clearTimeout(this.#phase);
    this.#phase = setTimeout(() => this.#stop('answer_timeout'), this.#request.timeoutMs);
  }

  clear(): void {
    clearTimeout(this.#phase);
    clearTimeout(this.#deadline);
  }
}

type Subprocess = ReturnType<Awaited<ReturnType<typeof loadExeca>>['execa']>;
type ExecaResult = Awaited<Subprocess>;

interface ProcessEnd {
  /** execa's result when every pipe closed; null when the attempt stopped reading pipes a helper holds. */
  readonly result: ExecaResult | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
}

/**
 * Resolves once the CLI has exited and its output has been read: when its pipes close, or (a helper
 * holds them) once they have been quiet for {@link DRAIN_QUIET_MS}, at most {@link DRAIN_MAX_MS} after
 * the exit. The pipes are then closed on this side; the helper is left alone.
 */
function untilExitAndDrained(subprocess: Subprocess, lastData: () => number): Promise<ProcessEnd> {
  return new Promise((resolve) => {
    let exit: { code: number | null; signal: string | null } | null = null;
    let drainTimer: NodeJS.Timeout | undefined;
    let exitedAt = 0;
    const finish = (end: ProcessEnd) => {
      clearTimeout(drainTimer);
      resolve(end);
    };
    void subprocess.then(
      (result) =>
        finish({ result, exitCode: exit?.code ?? result.exitCode ?? null, signal: exit?.signal ?? result.signal ?? null }),
      () => finish({ result: null, exitCode: exit?.code ?? null, signal: exit?.signal ?? null }),
    );
    const checkDrained = () => {
      const now = performance.now();
      const quietFor = now - Math.max(lastData(), exitedAt);
      if (quietFor >= DRAIN_QUIET_MS || now - exitedAt >= DRAIN_MAX_MS) {
        subprocess.stdout?.destroy();
        subprocess.stderr?.destroy();
        finish({ result: null, exitCode: exit?.code ?? null, signal: exit?.signal ?? null });
      } else {
        drainTimer = setTimeout(checkDrained, Math.min(DRAIN_QUIET_MS - quietFor, DRAIN_MAX_MS - (now - exitedAt)));
      }
    };
    subprocess.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      exit = { code, signal };
      exitedAt = performance.now();
      drainTimer = setTimeout(checkDrained, DRAIN_QUIET_MS);
    });
  });
}

/** Decode, dropping a multi-byte character cut in half by the output cap. */
function decodeUtf8Prefix(bytes: Buffer): string {
  return bytes.toString('utf8').replace(/\uFFFD$/, '');
}
