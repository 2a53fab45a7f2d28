import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/config.js';
import { buildRunArgs } from '../../ollama/cli-args.js';
import { classifyOutcome, type Classification } from '../../ollama/classify-outcome.js';
import type { ModelProcessRequest, ProcessOutcome } from '../../ollama/model-process.js';
import { isCloudModel } from '../../ollama/model-name.js';
import { parseUsage, type RunUsage } from '../../ollama/verbose-stats.js';
import type { CircuitTransition } from '../../policy/breaker-state.js';
import type { RunStatus } from '../../policy/run-status.js';
import { ownEscalation } from '../../policy/task-verdict.js';
import type { Grant } from '../queue/dispatcher.js';
import type { RunWarning } from '../reply/run-result.js';
import { notCounted } from '../reply/run-warnings.js';
import type { ContextCheck } from './context-check.js';
import { failure, notInstalledError } from './errors.js';
import type { AttemptLedger, Blocked } from './ledger.js';
import type { AttemptRecorder } from './record.js';
import type { Turn, TurnScheduler, WaitingAttempt } from './turn.js';
import type {
  AttemptDriver,
  AttemptInfo,
  AttemptOutcome,
  AttemptSource,
  CallContext,
  CallEvent,
  Ended,
  PreflightResult,
  RunRequest,
  Settled,
  Step,
} from './types.js';

interface AttemptsDeps {
  readonly config: Pick<Config, 'ollamaBin' | 'killGraceMs' | 'maxOutputBytes'>;
  /** Epoch ms. */
  readonly clock: () => number;
  readonly spawn: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  /** The CLI's environment. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Checks a model is installed before spawning (OLLAMA_MCP_PREFLIGHT); none: no check. */
  readonly preflight: ((model: string, host?: string) => Promise<PreflightResult>) | undefined;
  readonly ledger: AttemptLedger;
  readonly turns: TurnScheduler;
  readonly contextCheck: ContextCheck;
  readonly recorder: AttemptRecorder;
}

/** How an attempt ended before it is settled: what `end` records, once the call said whether it goes on. */
type Ending =
  | { readonly kind: 'missing'; readonly installed: readonly string[] }
  | { readonly kind: 'blocked'; readonly blocked: Blocked; readonly queueMs?: number }
  | Extract<Turn, { kind: 'refused' | 'stopped' }>
  | {
      readonly kind: 'ran';
      readonly grant: Grant;
      readonly transition: CircuitTransition;
      readonly queueMs: number;
      readonly outcome: ProcessOutcome;
      readonly classification: Classification;
      readonly excused: boolean;
    };

/** Makes the attempts of calls: each one is begun, run, then ended by its call. */
export class Attempts implements AttemptSource {
  readonly #deps: AttemptsDeps;

  constructor(deps: AttemptsDeps) {
    this.#deps = deps;
  }

  begin(step: Step, context: CallContext): Attempt {
    return new Attempt(this.#deps, step, context);
  }
}

/**
 * One attempt of one model, in two phases. `run`: preflight (is the model installed?), a turn
 * (circuit admission, the dispatcher's queue), the CLI process, and its status; the turn is still
 * held. `end`: the verdict recorded for the circuit and, unless the call goes on, for the task; the
 * turn given back; the runs.jsonl line and the result. Every attempt, refusals included, ends once.
 */
class Attempt implements AttemptDriver {
  readonly info: AttemptInfo;
  readonly #deps: AttemptsDeps;
  readonly #step: Step;
  readonly #context: CallContext;
  readonly #waiting: WaitingAttempt;
  readonly #warnings: RunWarning[] = [];
  #ending: Ending | null = null;
  /** The Ollama host the attempt was sent to, once granted. */
  #host: string | null = null;

  constructor(deps: AttemptsDeps, step: Step, context: CallContext) {
    this.#deps = deps;
    this.#step = step;
    this.#context = context;
    const { request, limits, modelKey } = step;
    this.info = {
      runId: randomUUID(),
      callId: context.callId ?? null,
      model: request.model,
      taskId: request.taskId ?? null,
      callerRetryCount: request.retryCount ?? null,
      chainId: step.chainId,
      chainStep: step.chainStep,
      busyTry: step.busyTry,
      batchId: context.batchId ?? null,
      maxRetries: limits.maxRetries,
      timeoutMs: limits.timeoutMs,
      startTimeoutMs: limits.startTimeoutMs,
      promptChars: request.prompt.length,
    };
    const batch = context.batchId !== undefined ? { id: context.batchId, limit: context.batchLimit ?? 1 } : undefined;
    this.#waiting = {
      runId: this.info.runId,
      modelKey,
      request,
      maxRetries: limits.maxRetries,
      timeoutMs: limits.timeoutMs,
      startTimeoutMs: limits.startTimeoutMs,
      breaker: limits.breaker,
      before: step.tried.map(({ model, run_id, status, own }) => ({ model, runId: run_id, status, own })),
      dispatch: { modelKey, parallel: limits.parallel, batch, keepAliveMs: limits.keepAliveMs, host: request.host },
      // The circuit is checked twice (admission, leaving the queue): say each thing once.
      note: (warning) => void (this.#warnings.some((w) => w.kind === warning.kind) || this.#warnings.push(warning)),
    };
  }

  async run(): Promise<AttemptOutcome> {
    const { request } = this.#step;
    // 1. Is the model installed? A missing one fails fast instead of starting a multi-GB pull
    //    (without a check nothing is awaited: the attempt reaches the queue in the same tick).
    const preflight = request.allowPull || isCloudModel(request.model) ? undefined : this.#deps.preflight;
    const check = preflight ? await preflight(request.model, request.host) : null;
    if (check?.kind === 'missing') return this.#ends(await this.#missing(check.installed));
    // 2. Its circuit admits it, and the dispatcher grants it a turn (the circuit is checked again then).
    const turn = await this.#deps.turns.takeTurn(this.#waiting, {
      signal: this.#context.signal,
      deadlineAt: this.#context.deadlineAt,
      inBatch: this.#context.batchId !== undefined,
      emit: (event) => void this.#emit(event),
    });
    if (turn.kind !== 'go') return this.#ends(turn);
    // 3. The CLI, with its two clocks; 4. its status. The turn is held until the attempt ends, so the
    //    next in line sees a circuit this run opened.
    await this.#emit({
      type: 'started',
      cold: turn.grant.cold,
      host: turn.grant.host?.named === true ? turn.grant.host.name : null,
    });
    const outcome = await this.#runModel(turn.grant);
    const classification = classifyOutcome(outcome);
    // A start that timed out beside models this server only guessed would fit is not the task's failure.
    // So is a host that could not be reached while another host can serve the model: the call goes on there.
    const excuse = excuseOf(turn.grant, classification);
    if (excuse !== null) this.#warnings.push(notCounted(excuse));
    const { grant, transition, queueMs } = turn;
    this.#host = grant.host?.name ?? null;
    const failover = excuse !== null && classification.status === 'ollama_unreachable';
    return {
      ...this.#ends({ kind: 'ran', grant, transition, queueMs, outcome, classification, excused: excuse !== null }),
      failover,
    };
  }

  /** The call stopped before this attempt could run (cancelled while it waited to retry a "not now"). */
  stopBeforeRun(error: string): void {
    this.#ending = { kind: 'stopped', status: 'cancelled', error, transition: null };
  }

  /** Record the verdict (for the task only if the call does not go on), give the turn back, write the line. */
  async end(willRetry: boolean): Promise<Ended> {
    const ending = this.#ending;
    if (ending === null) throw new Error('an attempt ends after it ran');
    const status = statusOf(ending);
    const settled = await this.#settle(ending, willRetry);
    const usage = ending.kind === 'ran' ? await this.#usage(ending.outcome) : undefined;
    const result = await this.#deps.recorder.record(
      {
        runId: this.info.runId,
        request: this.#step.request,
        timeoutMs: this.info.timeoutMs,
        startTimeoutMs: this.info.startTimeoutMs,
        maxRetries: this.info.maxRetries,
        status,
        classification:
          ending.kind === 'ran' ? ending.classification : failure(status, errorOf(ending, this.#step.request.model)),
        settled,
        outcome: ending.kind === 'ran' ? ending.outcome : undefined,
        queueMs: ending.kind === 'missing' ? undefined : ending.queueMs,
        usage,
        step: this.#step,
        willRetry,
        host: this.#host,
      },
      this.#warnings,
      this.#context,
    );
    await this.#emit({ type: 'ended', status, willRetry, result });
    const { transition } = settled;
    return { result, own: ownEscalation(status, transition === 'opened' || transition === 'reopened') };
  }

  #ends(ending: Ending): AttemptOutcome {
    this.#ending = ending;
    return { status: statusOf(ending) };
  }

  /** A missing model: a blocked task is refused as blocked whatever else is wrong with the call. */
  async #missing(installed: readonly string[]): Promise<Ending> {
    const blocked = await this.#deps.ledger.blocked(this.#waiting);
    return blocked === null ? { kind: 'missing', installed } : { kind: 'blocked', blocked };
  }

  async #settle(ending: Ending, willRetry: boolean): Promise<Settled> {
    const { ledger } = this.#deps;
    const attempt = this.#waiting;
    switch (ending.kind) {
      case 'missing':
        return ledger.settle(attempt, 'model_not_found', null, willRetry);
      case 'blocked':
        return ending.blocked.settled;
      case 'refused':
        return ledger.settleRefusal(attempt, willRetry, ending.own);
      case 'stopped':
        return ledger.settle(attempt, ending.status, ending.transition, false);
      case 'ran':
        try {
          return await ledger.settle(attempt, ending.classification.status, ending.transition, willRetry, ending.excused);
        } finally {
          ending.grant.release();
        }
    }
  }

  /** What the CLI reported, and the warning of a prompt that probably did not fit (spawns only for a large prompt). */
  async #usage(outcome: ProcessOutcome): Promise<RunUsage> {
    const usage = parseUsage(outcome.stderrTail);
    const truncation = await this.#deps.contextCheck.warningFor(this.#step.request.model, usage);
    if (truncation !== null) this.#warnings.push(truncation);
    return usage;
  }

  /** The CLI with its two clocks: the start allowance until the first byte of answer, then timeout_ms; a deadline over both. */
  async #runModel(grant: Grant): Promise<ProcessOutcome> {
    const { config, clock, env, spawn } = this.#deps;
    const { request } = this.#step;
    const { deadlineAt, signal } = this.#context;
    try {
      return await spawn({
        bin: config.ollamaBin,
        args: buildRunArgs(request.model, grant.sendKeepAlive ? request : withoutKeepAlive(request)),
        prompt: request.prompt,
        env: grant.host?.env ?? env,
        timeoutMs: this.info.timeoutMs,
        startTimeoutMs: this.info.startTimeoutMs,
        deadlineMs: deadlineAt === undefined ? undefined : Math.max(1, deadlineAt - clock()),
        killGraceMs: config.killGraceMs,
        maxOutputBytes: config.maxOutputBytes,
        onFirstByte: () => {
          grant.answerBegan();
          void this.#emit({ type: 'first_byte' });
        },
        signal,
        onOutput: (bytes) => void this.#emit({ type: 'output', bytes }),
      });
    } catch (error) {
      grant.release();
      throw error;
    }
  }

  #emit(event: DistributiveOmit<CallEvent, 'attempt'>): Promise<void> {
    return this.#context.events.emit({ ...event, attempt: this.info } as CallEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function statusOf(ending: Ending): RunStatus {
  switch (ending.kind) {
    case 'missing':
      return 'model_not_found';
    case 'blocked':
      return 'blocked';
    case 'refused':
      return 'circuit_open';
    case 'stopped':
      return ending.status;
    case 'ran':
      return ending.classification.status;
  }
}

function errorOf(ending: Exclude<Ending, { kind: 'ran' }>, model: string): string {
  switch (ending.kind) {
    case 'missing':
      return notInstalledError(model, ending.installed);
    case 'blocked':
      return ending.blocked.error;
    default:
      return ending.error;
  }
}

/**
 * Why an attempt that ran is not its task's failure, or null: a start that timed out beside models
 * this server only guessed would fit; a host that could not be reached while another can serve.
 */
function excuseOf(grant: Grant, classification: Classification): string | null {
  if (classification.status === 'start_timeout') return grant.startTimedOut();
  if (classification.status === 'ollama_unreachable') return grant.unreachable?.(classification.error ?? 'unreachable') ?? null;
  return null;
}

/** A call's request without its keep-alive (Ollama then keeps whatever the loaded model has). */
function withoutKeepAlive(request: RunRequest): RunRequest {
  const { keepalive: _dropped, ...rest } = request;
  return rest;
}
