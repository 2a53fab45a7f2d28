import { StringDecoder } from 'node:string_decoder';
import { spawnErrorOf } from './cli-errors.js';
import { spawnFailureOf, untilExitAndDrained, type ProcessEnd } from './process-end.js';
import { GroupTerminator, OWN_PROCESS_GROUP, signalGroup } from './process-group.js';
import { startProcess, type StartFailure } from './start-process.js';

export interface ModelProcessRequest {
  readonly bin: string;
  readonly args: readonly string[];
  /** Written to stdin, which is then closed: the CLI reads stdin to EOF before it starts. */
  readonly prompt: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Limit of the answer, counted from its first byte on stdout. */
  readonly timeoutMs: number;
  /** Limit of the wait for that first byte, while Ollama queues the request, loads the model or reads the prompt. */
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
  /** Set when the CLI could not be started at all (not found, not executable, the machine out of descriptors or processes). */
  readonly spawnError: string | null;
  /** The spawn error's code (`ENOENT`, `EACCES`, `EMFILE`, `EAGAIN`...), when it had one. */
  readonly spawnErrorCode: string | null;
  /** Spawn to exit; 0 when nothing could be started. */
  readonly durationMs: number;
  /** Spawn to the first byte of answer; null when none came. */
  readonly startMs: number | null;
  readonly pid: number | null;
  readonly timeoutMs: number;
  readonly startTimeoutMs: number;
  readonly maxOutputBytes: number;
}

const STDERR_TAIL_BYTES = 16 * 1024;

/** Model processes (group leaders) still running: their groups are killed if this process exits, so none outlives the server. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killOnExit(pid: number): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Synchronous 'exit' (also after an uncaught error or process.exit): no grace can be waited for.
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
  const start = await startProcess(request.bin, request.args, {
    // The prompt is written to the stdin pipe below; one exit hook replaces `cleanup`; the limits are
    // timers that signal the whole process group (execa's `timeout`/`cancelSignal` reach the leader only).
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
  if ('failure' in start) return notStarted(request, start.failure);
  const { subprocess } = start;
  const control = new ProcessControl(subprocess.pid, request);
  const output = new OutputCapture(request, started, control);
  // Written whole, then closed: the CLI reads stdin to EOF before it starts. A CLI that exits
  // before reading it makes this EPIPE, which execa ignores (the exit code tells what happened).
  subprocess.stdin?.end(request.prompt);
  subprocess.stdout?.on('data', (chunk: Buffer) => output.stdout(chunk));
  subprocess.stderr?.on('data', (chunk: Buffer) => output.stderr(chunk));

  const end = await untilExitAndDrained(subprocess, () => output.lastData);
  control.exited();
  return outcomeOf(request, end, control.ending, output, Math.round(performance.now() - started));
}

/** The two clocks and the deadline, what ended the process (a limit, a cancel, the output cap), and the group's signals. */
class ProcessControl {
  ending: Ending | null = null;
  readonly #pid: number | undefined;
  readonly #request: ModelProcessRequest;
  readonly #group: GroupTerminator | null = null;
  #phase: NodeJS.Timeout | undefined;
  #deadline: NodeJS.Timeout | undefined;
  readonly #onAbort = () => this.#stop('cancel');

  constructor(pid: number | undefined, request: ModelProcessRequest) {
    this.#pid = pid;
    this.#request = request;
    if (pid === undefined) return;
    this.#group = new GroupTerminator(pid, request.killGraceMs);
    killOnExit(pid);
    this.#phase = setTimeout(() => this.#stop('start_timeout'), request.startTimeoutMs);
    if (request.deadlineMs !== undefined) this.#deadline = setTimeout(() => this.#stop('deadline'), request.deadlineMs);
    request.signal?.addEventListener('abort', this.#onAbort, { once: true });
    if (request.signal?.aborted) this.#onAbort();
    request.onSpawn?.(pid);
  }

  answerBegan(): void {
    clearTimeout(this.#phase);
    this.#phase = setTimeout(() => this.#stop('answer_timeout'), this.#request.timeoutMs);
  }

  /** Stop the process without naming a limit (the output cap). */
  terminate(): void {
    this.#group?.terminate();
  }

  exited(): void {
    clearTimeout(this.#phase);
    clearTimeout(this.#deadline);
    this.#request.signal?.removeEventListener('abort', this.#onAbort);
    if (this.#pid !== undefined) liveGroups.delete(this.#pid);
    this.#group?.exited();
  }

  #stop(why: Ending): void {
    this.ending ??= why;
    this.terminate();
  }
}

/** stdout kept up to the cap (the first byte starts the answer's clock), and the last KiB of stderr. */
class OutputCapture {
  /** The answer decoded as it arrives, so no chunk outlives its text (the cap can be 100 MB). */
  readonly #decoder = new StringDecoder('utf8');
  readonly #parts: string[] = [];
  #bytes = 0;
  truncated = false;
  startMs: number | null = null;
  #stderrTail = Buffer.alloc(0);
  lastData: number;

  constructor(
    private readonly request: ModelProcessRequest,
    private readonly started: number,
    private readonly control: Pick<ProcessControl, 'answerBegan' | 'terminate'>,
  ) {
    this.lastData = started;
  }

  stdout(chunk: Buffer): void {
    this.lastData = performance.now();
    if (this.startMs === null) {
      this.startMs = Math.round(this.lastData - this.started);
      this.control.answerBegan();
      this.request.onFirstByte?.();
    }
    if (this.truncated) return;
    const room = this.request.maxOutputBytes - this.#bytes;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#parts.push(this.#decoder.write(kept));
    this.#bytes += kept.length;
    if (kept !== chunk) {
      this.truncated = true;
      this.control.terminate();
    }
    this.request.onOutput?.(this.#bytes);
  }

  stderr(chunk: Buffer): void {
    this.lastData = performance.now();
    const joined = Buffer.concat([this.#stderrTail, chunk]);
    this.#stderrTail = joined.length > STDERR_TAIL_BYTES ? joined.subarray(joined.length - STDERR_TAIL_BYTES) : joined;
  }

  /** The answer as text; a multi-byte character cut in half by the cap (or the end) is left out. */
  text(): string {
    const text = this.#parts.join('');
    this.#parts.length = 0;
    return text;
  }

  stderrText(): string {
    return this.#stderrTail.toString('utf8');
  }
}

function outcomeOf(
  request: ModelProcessRequest,
  end: ProcessEnd,
  ending: Ending | null,
  output: OutputCapture,
  durationMs: number,
): ProcessOutcome {
  const failure = spawnFailureOf(end, ending !== null);
  const deadlineReached = ending === 'deadline';
  const beganAnswer = output.startMs !== null;
  return {
    stdout: output.text(),
    stderrTail: output.stderrText(),
    exitCode: end.exitCode,
    signal: end.signal,
    timedOut: ending === 'answer_timeout' || (deadlineReached && beganAnswer),
    startTimedOut: ending === 'start_timeout' || (deadlineReached && !beganAnswer),
    deadlineReached,
    truncated: output.truncated,
    cancelled: ending === 'cancel',
    ...spawnErrorOf(request.bin, failure),
    durationMs: failure === null ? durationMs : 0, // nothing ran
    startMs: output.startMs,
    pid: end.pid,
    ...limitsOf(request),
  };
}

/** The outcome of a CLI that could not be started: nothing ran. */
function notStarted(request: ModelProcessRequest, failure: StartFailure): ProcessOutcome {
  return {
    stdout: '',
    stderrTail: '',
    exitCode: null,
    signal: null,
    timedOut: false,
    startTimedOut: false,
    deadlineReached: false,
    truncated: false,
    cancelled: false,
    ...spawnErrorOf(request.bin, failure),
    durationMs: 0,
    startMs: null,
    pid: null,
    ...limitsOf(request),
  };
}

function limitsOf({ timeoutMs, startTimeoutMs, maxOutputBytes }: ModelProcessRequest) {
  return { timeoutMs, startTimeoutMs, maxOutputBytes };
}
