import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { ModelSettings } from '../config/model-tiers.js';
import { buildRunArgs } from '../ollama/cli-args.js';
import { classifyOutcome, type Classification } from '../ollama/classify-outcome.js';
import type { ModelProcessRequest, ProcessOutcome } from '../ollama/model-process.js';
import { canonicalModelName, isCloudModel } from '../ollama/model-name.js';
import { parseGoDuration, parseUsage } from '../ollama/verbose-stats.js';
import type { CircuitTransition } from '../policy/breaker-state.js';
import type { RunStatus } from '../policy/run-status.js';
import { ownEscalation } from '../policy/task-verdict.js';
import { notInstalledError } from './attempt-errors.js';
import type { AttemptLedger } from './attempt-ledger.js';
import type { AttemptRecorder } from './attempt-record.js';
import { BUSY_WAIT_CANCELLED, STOP, type AttemptResult, type CallStep, type Next } from './call-runner.js';
import type { ContextCheck } from './context-check.js';
import type { Grant } from './dispatcher.js';
import type { ProbeWaiters } from './probe-waiters.js';
import type { Attempt, Settled } from './run-report.js';
import type { PreflightResult, RunContext, RunRequest } from './run-request.js';
import type { RunResult, RunWarning } from './run-result.js';
import { notCounted } from './run-warnings.js';
import { nextAfter, type ScheduledAttempt, type TurnScheduler } from './turn-scheduler.js';
import type { AttemptJournal } from '../store/attempt-journal.js';
import type { SelfIdentity } from '../store/processes/proc-reader.js';

export interface AttemptRunnerDeps {
  readonly config: Config;
  /** Epoch ms. */
  readonly clock: () => number;
  readonly spawn: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  /** The CLI's environment. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly settingsFor: (model: string) => ModelSettings;
  /** Checks a model is installed before spawning (OLLAMA_MCP_PREFLIGHT); none: no check. */
  readonly preflight: ((model: string) => Promise<PreflightResult>) | undefined;
  readonly ledger: AttemptLedger;
  readonly probes: ProbeWaiters;
  readonly contextCheck: ContextCheck;
  readonly recorder: AttemptRecorder;
  /** Where attempts under way are recorded, so a crash cannot lose them (app/interrupted-attempts.ts); null: nowhere. */
  readonly journal: AttemptJournal | null;
  readonly identity: SelfIdentity;
  readonly warn: (message: string) => void;
}

/** An attempt on its way, with the warnings its result will carry. */
interface LiveAttempt extends ScheduledAttempt {
  readonly warnings: RunWarning[];
}

type Ending = Omit<Attempt, 'runId' | 'request' | 'timeoutMs' | 'startTimeoutMs' | 'maxRetries'>;

/**
 * One attempt of one model, from admission to its runs.jsonl line: preflight, its turn (circuit
 * admission, the dispatcher's queue), the CLI process, the verdict for the task and the circuit, the
 * line and the result. Every path, refusals included, ends in the recorder, so every attempt is
 * logged exactly once and every result has the same shape.
 */
export class AttemptRunner {
  readonly #deps: AttemptRunnerDeps;
  #scheduler: TurnScheduler | null = null;
  #journalWarned = false;

  constructor(deps: AttemptRunnerDeps) {
    this.#deps = deps;
  }

  /** The scheduler the attempts take their turn from (it settles through this runner). */
  set scheduler(scheduler: TurnScheduler) {
    this.#scheduler = scheduler;
  }

  async run(request: RunRequest, context: RunContext, step?: CallStep): Promise<AttemptResult> {
    const attempt = this.#newAttempt(request, context, step);
    // 0. Is the model installed? A missing one fails fast instead of starting a multi-GB pull.
    // (Without a check nothing is awaited here: the attempt reaches the queue in the same tick.)
    const preflight = request.allowPull || isCloudModel(request.model) ? undefined : this.#deps.preflight;
    const check = preflight ? await preflight(request.model) : null;
    if (check?.kind === 'missing') {
      const blocked = await this.#deps.ledger.blocked(attempt);
      if (blocked !== null) {
        const ending = {
          status: blocked.status,
          classification: failure(blocked.status, blocked.error),
          settled: blocked.settled,
        };
        return this.#end(attempt, ending, STOP, context);
      }
      const next = await nextAfter(attempt, 'model_not_found');
      const settled = await this.settle(attempt, 'model_not_found', null, next.kind !== 'stop');
      const classification = failure('model_not_found', notInstalledError(request.model, check.installed));
      return this.#end(attempt, { status: 'model_not_found', classification, settled }, next, context);
    }

    // 1. Circuit admission, 2. a turn in the dispatcher's queue, and the circuit again once it is
    //    granted (it may have opened while the attempt waited).
    const turn = await this.#scheduler!.takeTurn(attempt, context);
    if (!turn.go) {
      const { status, error, settled, queueMs, next } = turn;
      const ending = { status, classification: failure(status, error), settled, ...(queueMs !== undefined ? { queueMs } : {}) };
      return this.#end(attempt, ending, next, context);
    }

    // 3. The model process, 4. what it means for the task, the circuit and the caller. The turn is
    //    given back only once the verdict is recorded, so the next in line sees a circuit this run opened.
    //    The attempt is recorded as under way until its line is written: a crash cannot lose it.
    const journaled = await this.#journalOpen(attempt, context);
    const outcome = await this.#runModel(attempt, turn.grant, context);
    context.onPhase?.({ phase: 'finishing' });
    const classification = classifyOutcome(outcome);
    // A start that timed out beside models this server only guessed it would fit with is not the task's failure.
    const excuse = classification.status === 'start_timeout' ? turn.grant.startTimedOut() : null;
    if (excuse !== null) attempt.note(notCounted(excuse));
    const next = await nextAfter(attempt, classification.status);
    let settled: Settled;
    try {
      settled = await this.settle(attempt, classification.status, turn.transition, next.kind !== 'stop', excuse !== null);
    } finally {
      turn.grant.release();
    }
    const usage = parseUsage(outcome.stderrTail);
    const truncation = await this.#deps.contextCheck.warningFor(request.model, usage); // spawns only for a large prompt
    if (truncation !== null) attempt.warnings.push(truncation);
    const ending = { status: classification.status, classification, outcome, queueMs: turn.queueMs, settled, usage };
    const ended = await this.#end(attempt, ending, next, context);
    if (journaled) await this.#deps.journal!.close(attempt.runId).catch((error: Error) => this.#journalProblem(error));
    return ended;
  }

  /** Record the attempt as under way; false (and one warning) when it cannot be: the run goes on. */
  async #journalOpen(attempt: LiveAttempt, context: RunContext): Promise<boolean> {
    const { journal, identity, clock } = this.#deps;
    if (journal === null) return false;
    const { request, step } = attempt;
    try {
      await journal.open({
        runId: attempt.runId,
        taskId: request.taskId ?? null,
        model: request.model,
        tool: context.batchId ? 'ollama_run_many' : 'ollama_run',
        batchId: context.batchId ?? null,
        chainId: step?.chainId ?? null,
        chainStep: step?.chainStep ?? null,
        maxRetries: attempt.maxRetries,
        callerRetryCount: request.retryCount ?? null,
        timeoutMs: attempt.timeoutMs,
        startTimeoutMs: attempt.startTimeoutMs,
        promptChars: request.prompt.length,
        startedAt: clock(),
        server: { ...identity.self, ...identity.place },
      });
      return true;
    } catch (error) {
      this.#journalProblem(error as Error);
      return false;
    }
  }

  #journalProblem(error: Error): void {
    if (this.#journalWarned) return;
    this.#journalWarned = true;
    this.#deps.warn(
      `cannot record the attempts under way (${error.message}): runs go on, but one cut off by a crash of this server will not be settled by the next`,
    );
  }

  /** A call cancelled while it waited to retry a busy server: settled and logged, nothing spawned. */
  async cancelledWaiting(request: RunRequest, context: RunContext, step: CallStep): Promise<RunResult> {
    const attempt = this.#newAttempt(request, context, step);
    const settled = await this.settle(attempt, 'cancelled', null, false);
    const classification = failure('cancelled', BUSY_WAIT_CANCELLED);
    return (await this.#end(attempt, { status: 'cancelled', classification, settled }, STOP, context)).result;
  }

  /** Record a verdict for the circuit (and the task, unless the call goes on or it is `excused`), then wake the model's probe waiters. */
  async settle(
    attempt: ScheduledAttempt,
    status: RunStatus,
    transition: CircuitTransition,
    willRetry: boolean,
    excused = false,
  ): Promise<Settled> {
    try {
      return await this.#deps.ledger.settle(attempt, status, transition, willRetry, excused);
    } finally {
      // This may have been the probe others wait for: let them read its verdict now.
      this.#deps.probes.wake(attempt.modelKey);
    }
  }

  /** The CLI with its two clocks: the start allowance until the first byte of answer, then timeout_ms; a deadline over both. */
  async #runModel(attempt: LiveAttempt, grant: Grant, context: RunContext): Promise<ProcessOutcome> {
    const { config, clock, env } = this.#deps;
    const { request } = attempt;
    const deadlineMs = context.deadlineAt === undefined ? undefined : Math.max(1, context.deadlineAt - clock());
    context.onPhase?.({ phase: 'starting', cold: grant.cold });
    try {
      return await this.#deps.spawn({
        bin: config.ollamaBin,
        args: buildRunArgs(request.model, grant.sendKeepAlive ? request : withoutKeepAlive(request)),
        prompt: request.prompt,
        env,
        timeoutMs: attempt.timeoutMs,
        startTimeoutMs: attempt.startTimeoutMs,
        ...(deadlineMs !== undefined ? { deadlineMs } : {}),
        killGraceMs: config.killGraceMs,
        maxOutputBytes: config.maxOutputBytes,
        onFirstByte: () => {
          grant.answerBegan();
          context.onPhase?.({ phase: 'running' });
        },
        ...(context.signal ? { signal: context.signal } : {}),
        ...(context.onOutput ? { onOutput: context.onOutput } : {}),
      });
    } catch (error) {
      grant.release();
      throw error;
    }
  }

  async #end(attempt: LiveAttempt, ending: Ending, next: Next, context: RunContext): Promise<AttemptResult> {
    const { runId, request, timeoutMs, startTimeoutMs, maxRetries, warnings, step } = attempt;
    const result = await this.#deps.recorder.record(
      { runId, request, timeoutMs, startTimeoutMs, maxRetries, ...ending },
      { warnings, ...(step ? { step } : {}), willRetry: next.kind !== 'stop' },
      context,
    );
    const { transition } = ending.settled;
    return { result, next, own: ownEscalation(ending.status, transition === 'opened' || transition === 'reopened') };
  }

  #newAttempt(request: RunRequest, context: RunContext, step?: CallStep): LiveAttempt {
    const settings = this.#deps.settingsFor(request.model);
    const warnings: RunWarning[] = [];
    const modelKey = canonicalModelName(request.model);
    const keepAliveMs = keepAliveMsOf(request.keepalive);
    return {
      runId: randomUUID(),
      modelKey,
      request,
      dispatch: {
        modelKey,
        parallel: settings.parallel,
        ...(context.batchId !== undefined && context.batchLimit !== undefined
          ? { batch: { id: context.batchId, limit: context.batchLimit } }
          : {}),
        ...(keepAliveMs !== undefined ? { keepAliveMs } : {}),
      },
      breaker: { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs },
      timeoutMs: step?.timeoutMs ?? request.timeoutMs ?? settings.timeoutMs,
      startTimeoutMs: step?.startTimeoutMs ?? request.startTimeoutMs ?? settings.startTimeoutMs,
      maxRetries: step?.maxRetries ?? request.maxRetries ?? settings.maxRetries,
      warnings,
      ...(step ? { step } : {}),
      before: (step?.tried ?? []).map(({ model, run_id, status, own }) => ({ model, runId: run_id, status, own })),
      // The circuit is checked twice (admission, leaving the queue): say each thing once.
      note: (warning) => void (warnings.some((w) => w.kind === warning.kind) || warnings.push(warning)),
    };
  }
}

/** A call's request without its keep-alive (Ollama then keeps whatever the loaded model has). */
function withoutKeepAlive(request: RunRequest): RunRequest {
  const { keepalive: _dropped, ...rest } = request;
  return rest;
}

/** A `keepalive` argument in ms (negative: forever); undefined when the call gives none. */
function keepAliveMsOf(keepalive: string | undefined): number | undefined {
  if (keepalive === undefined) return undefined;
  const ns = parseGoDuration(keepalive);
  if (ns === null) return undefined;
  return ns < 0 ? Infinity : ns / 1e6;
}

export function failure(status: RunStatus, error: string): Classification {
  return { status, error, answer: '', thinking: '' };
}
