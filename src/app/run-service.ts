import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { AnswerFiles } from './answer-files.js';
import { fitReply, type FittedReply } from './reply-fit.js';
import { AttemptLedger } from './attempt-ledger.js';
import { NOT_STARTED_ERROR, notInstalledError } from './attempt-errors.js';
import { ProbeWaiters } from './probe-waiters.js';
import { toRunMetadata, toRunRecord, type Attempt, type Settled, type StepFacts } from './run-report.js';
import { BUSY_WAIT_CANCELLED, runCall, type CallRunnerDeps, type CallStep } from './call-runner.js';
import { salvageRequest, type PreflightResult, type RunContext, type RunRequest } from './run-request.js';
import { TurnScheduler, type ScheduledCall } from './turn-scheduler.js';
import { CallSlots } from './call-slots.js';
import { Dispatcher } from './dispatcher.js';
import { Residency } from './residency.js';
import type { Config } from '../config/config.js';
import { configSettings, type ModelSettings } from '../config/model-tiers.js';
import { canonicalModelName, isCloudModel } from '../ollama/model-name.js';
import type { RunStatus } from '../policy/run-status.js';
import type { RunResult, RunWarning } from './run-result.js';
import { cliEnvironment } from '../ollama/child-env.js';
import { buildRunArgs } from '../ollama/cli-args.js';
import { classifyOutcome, type Classification } from '../ollama/classify-outcome.js';
import { runModelProcess, type ModelProcessRequest, type ProcessOutcome } from '../ollama/model-process.js';
import { parseGoDuration, parseUsage } from '../ollama/verbose-stats.js';
import type { LoadedModelsResult } from '../ollama/loaded-models.js';
import { cliContextCheck, type ContextCheck } from './context-check.js';
import type { SharedSlots } from '../store/shared-slots.js';
import type { StateBackend } from '../store/state-backend.js';
import type { RunLog } from '../telemetry/run-log.js';
import type { CircuitTransition } from '../policy/breaker-state.js';

export type { ModelSettings, PreflightResult, RunContext, RunRequest };

/** This server's queue, for `ollama_health`. */
export interface QueueView {
  readonly running: number;
  readonly waiting: number;
  /** OLLAMA_MCP_CONCURRENCY. */
  readonly limit: number;
  /** Models this server believes Ollama has loaded, least recently used first. */
  readonly loaded: readonly string[];
  /** Models Ollama keeps loaded together, as set or learned. */
  readonly capacity: number;
}

export interface RunServiceDeps {
  readonly config: Config;
  readonly store: StateBackend;
  readonly log: RunLog;
  /** Epoch ms. Injected so tests and the store agree on time. @default Date.now */
  readonly clock?: () => number;
  /** ms, monotonic: the dispatcher's waits and keep-alives. @default performance.now */
  readonly monotonicClock?: () => number;
  /** `ollama ps`, parsed: which models Ollama has loaded. @default none (only this server's own dispatches count) */
  readonly readLoaded?: (() => Promise<LoadedModelsResult>) | null;
  /** @default runModelProcess (execa) */
  readonly spawn?: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  /** Environment handed to the CLI. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly onWarning?: (message: string) => void;
  /** Per-model limits. @default the environment's, for every model */
  readonly settingsFor?: (model: string) => ModelSettings;
  /** Checks a model is installed before spawning (OLLAMA_MCP_PREFLIGHT). @default none */
  readonly preflight?: (model: string) => Promise<PreflightResult>;
  /** [0, 1), the busy backoff's jitter. @default Math.random */
  readonly random?: () => number;
  /** Waits between busy retries; resolves false when `signal` aborts first. @default a timer */
  readonly sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<boolean>;
  /** The cap shared by every server process (OLLAMA_MCP_SHARED_CONCURRENCY). @default none */
  readonly sharedSlots?: SharedSlots | null;
  /** Where answers too large for a reply are kept whole. @default `answers/` in the telemetry dir; null: nowhere */
  readonly answers?: AnswerFiles | null;
}

/** One try as it goes through the steps, with the warnings its result will carry. */
interface Call extends ScheduledCall {
  readonly warnings: RunWarning[];
  /** Its place in the call (fallback chain, busy retries). */
  readonly step?: CallStep;
}

/**
 * One `ollama_run` attempt from admission to its runs.jsonl line: preflight, circuit admission,
 * the concurrency queues, the CLI process, classification, the ledger and circuit update, the log
 * line and the result. Every path, rejections included, ends in `#finish`, so every attempt is
 * logged exactly once and every result has the same shape.
 */
export class RunService {
  readonly #config: Config;
  readonly #log: RunLog;
  readonly #clock: () => number;
  readonly #spawn: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #settingsFor: (model: string) => ModelSettings;
  readonly #preflight: ((model: string) => Promise<PreflightResult>) | undefined;
  readonly #ledger: AttemptLedger;
  readonly #dispatcher: Dispatcher;
  readonly #residency: Residency;
  readonly #probes: ProbeWaiters;
  readonly #scheduler: TurnScheduler;
  readonly #inFlight = new Set<Promise<RunResult>>();
  readonly #shutdown = new AbortController();
  readonly #calls: CallRunnerDeps;
  readonly #contextCheck: ContextCheck;
  readonly #answers: AnswerFiles | null;

  constructor(deps: RunServiceDeps) {
    const config = deps.config;
    this.#config = config;
    setMaxListeners(0, this.#shutdown.signal); // one listener per call in flight, hundreds when many are queued
    this.#log = deps.log;
    this.#clock = deps.clock ?? Date.now;
    this.#spawn = deps.spawn ?? runModelProcess;
    this.#env = cliEnvironment(config, deps.env);
    this.#contextCheck = cliContextCheck(config, this.#env, this.#clock);
    const defaults = configSettings(config);
    this.#settingsFor = deps.settingsFor ?? (() => defaults);
    this.#preflight = deps.preflight;
    this.#answers =
      deps.answers === undefined ? new AnswerFiles({ dir: path.join(config.telemetryDir, 'answers') }) : deps.answers;
    const warn = deps.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    this.#ledger = new AttemptLedger({ store: deps.store, clock: this.#clock, config, warn });
    const monotonic = deps.monotonicClock ?? (() => performance.now());
    this.#residency = new Residency({
      capacity: config.maxLoadedModels,
      keepAliveMs: config.keepAliveMs,
      clock: monotonic,
      readLoaded: deps.readLoaded ?? null,
      warn,
      onChange: () => this.#dispatcher.look(),
    });
    this.#dispatcher = new Dispatcher({
      concurrency: config.concurrency,
      switchAfterMs: config.switchAfterMs,
      residency: this.#residency,
      clock: monotonic,
    });
    const slots = new CallSlots(this.#dispatcher, deps.sharedSlots ?? null);
    this.#probes = new ProbeWaiters((modelKey) => this.#ledger.circuitOf(modelKey), this.#clock);
    const [ledger, probes, clock] = [this.#ledger, this.#probes, this.#clock];
    this.#scheduler = new TurnScheduler({
      ledger,
      slots,
      probes,
      clock,
      settle: (call, status, t) => this.#settle(call, status, t),
    });
    this.#calls = {
      attempt: (request, context, step) => this.#run(request, context, step),
      cancelledWaiting: (request, context, step) => this.#cancelledWaiting(request, context, step),
      settingsFor: this.#settingsFor,
      busyRetries: config.busyRetries,
      clock: this.#clock,
      random: deps.random ?? Math.random,
      sleep: deps.sleep ?? sleepUnlessAborted,
      newId: randomUUID,
    };
  }

  /** This server's queue: calls running and waiting, the limit (OLLAMA_MCP_CONCURRENCY), and what it believes Ollama has loaded. */
  get queue(): QueueView {
    const { loaded, capacity } = this.#dispatcher.residency();
    return {
      running: this.#dispatcher.running,
      waiting: this.#dispatcher.waiting,
      limit: this.#dispatcher.limit,
      loaded,
      capacity,
    };
  }

  /** Attempts started and not yet logged. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Resolves when every attempt started so far has finished and been logged. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  /** Stop every queued and running attempt (server shutdown); later attempts end as cancelled at once. */
  abortAll(): void {
    this.#shutdown.abort();
  }

  /** The limits in force for a model. */
  settingsFor(model: string): ModelSettings {
    return this.#settingsFor(model);
  }

  run(request: RunRequest, context: RunContext = {}): Promise<RunResult> {
    if (!context.signal) return this.#track(runCall(this.#calls, request, { ...context, signal: this.#shutdown.signal }));
    const { signal, unlink } = eitherAborts(context.signal, this.#shutdown.signal);
    return this.#track(runCall(this.#calls, request, { ...context, signal }).finally(unlink));
  }

  /** An attempt refused before anything ran because its arguments were invalid: logged, never spawned. */
  rejectInvalid(rawArgs: unknown, message: string, context: RunContext & { tool?: string } = {}): Promise<RunResult> {
    const { request, maxRetries, retryCount } = salvageRequest(rawArgs);
    const max = maxRetries ?? this.#config.maxRetries;
    return this.#refuse(request, context, 'invalid_input', message, max, retryCount, context.tool);
  }

  /** A batch job that never started because the batch deadline passed: logged, never spawned. */
  notStarted(request: RunRequest, context: RunContext): Promise<RunResult> {
    const maxRetries = request.maxRetries ?? this.#settingsFor(request.model).maxRetries;
    return this.#refuse(request, context, 'not_started', NOT_STARTED_ERROR, maxRetries, request.retryCount ?? 0);
  }

  async #run(request: RunRequest, context: RunContext, step?: CallStep): Promise<RunResult> {
    const call = this.#newCall(request, context, step);
    const finish = (rest: Omit<Attempt, 'runId' | 'request' | 'timeoutMs' | 'startTimeoutMs' | 'maxRetries'>) =>
      this.#finish({ ...this.#limitsOf(call), request, ...rest }, call, context);

    // 0. Is the model installed? A missing one fails fast instead of starting a multi-GB pull.
    // (Without a check nothing is awaited here: the call reaches the queue in the same tick.)
    const preflight = request.allowPull || isCloudModel(request.model) ? undefined : this.#preflight;
    const check = preflight ? await preflight(request.model) : null;
    if (check?.kind === 'missing') {
      const classification = failure('model_not_found', notInstalledError(request.model, check.installed));
      return finish({ status: 'model_not_found', classification, settled: await this.#settle(call, 'model_not_found', null) });
    }

    // 1. Circuit admission, 2. a place in the concurrency queues, and the circuit again once the
    //    slot is granted (it may have opened while the call waited in line).
    const turn = await this.#scheduler.takeTurn(call, context);
    if (!turn.go) {
      const { status, error, settled, queueMs } = turn;
      return finish({ status, classification: failure(status, error), settled, ...(queueMs !== undefined ? { queueMs } : {}) });
    }

    // 3. The model process: the start allowance until its first byte of answer, then timeout_ms; a
    //    deadline (deadline_ms, a batch's) bounds both.
    const deadlineMs = context.deadlineAt === undefined ? undefined : Math.max(1, context.deadlineAt - this.#clock());
    const { grant } = turn;
    context.onPhase?.({ phase: 'starting', cold: grant.cold });
    let outcome: ProcessOutcome;
    try {
      outcome = await this.#spawn({
        bin: this.#config.ollamaBin,
        args: buildRunArgs(request.model, grant.sendKeepAlive ? request : withoutKeepAlive(request)),
        prompt: request.prompt,
        env: this.#env,
        timeoutMs: call.timeoutMs,
        startTimeoutMs: call.startTimeoutMs,
        ...(deadlineMs !== undefined ? { deadlineMs } : {}),
        killGraceMs: this.#config.killGraceMs,
        maxOutputBytes: this.#config.maxOutputBytes,
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

    // 4. What it means, for the task, the circuit and the caller. The slot is freed only once the
    //    verdict is recorded, so the next call in line re-checks a circuit this run may have opened.
    context.onPhase?.({ phase: 'finishing' });
    const classification = classifyOutcome(outcome);
    let settled: Settled;
    try {
      settled = await this.#settle(call, classification.status, turn.transition);
    } finally {
      grant.release();
    }
    const usage = parseUsage(outcome.stderrTail);
    const truncation = await this.#contextCheck.warningFor(request.model, usage); // spawns only for a large prompt
    if (truncation !== null) call.warnings.push(truncation);
    return finish({ status: classification.status, classification, outcome, queueMs: turn.queueMs, settled, usage });
  }

  /** A call cancelled while it waited to retry a busy server: settled and logged, nothing spawned. */
  async #cancelledWaiting(request: RunRequest, context: RunContext, step: CallStep): Promise<RunResult> {
    const call = this.#newCall(request, context, step);
    const settled = await this.#settle(call, 'cancelled', null);
    const classification = failure('cancelled', BUSY_WAIT_CANCELLED);
    return this.#finish({ ...this.#limitsOf(call), request, status: 'cancelled', classification, settled }, call, context);
  }

  #newCall(request: RunRequest, context: RunContext, step?: CallStep): Call {
    const settings = this.#settingsFor(request.model);
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
      ...(step ? { step, goesOn: step.goesOn } : {}),
      // The circuit is checked twice (admission, leaving the queue): say each thing once.
      note: (warning) => void (warnings.some((w) => w.kind === warning.kind) || warnings.push(warning)),
    };
  }

  #limitsOf(call: Call): Pick<Attempt, 'runId' | 'timeoutMs' | 'startTimeoutMs' | 'maxRetries'> {
    return { runId: call.runId, timeoutMs: call.timeoutMs, startTimeoutMs: call.startTimeoutMs, maxRetries: call.maxRetries };
  }

  async #settle(call: ScheduledCall, status: RunStatus, transition: CircuitTransition): Promise<Settled> {
    try {
      return await this.#ledger.settle(call, status, transition);
    } finally {
      // This may have been the probe others wait for: let them read its verdict now.
      this.#probes.wake(call.modelKey);
    }
  }

  /** Log and answer an attempt that touched neither the ledger nor a circuit, and spawned nothing. */
  #refuse(
    request: RunRequest,
    context: RunContext,
    status: 'invalid_input' | 'not_started',
    message: string,
    maxRetries: number,
    retryCount: number,
    tool?: string,
  ): Promise<RunResult> {
    const settled = this.#ledger.unsettled(retryCount, { escalate: false, reason: null });
    const attempt: Attempt = {
      runId: randomUUID(),
      request,
      timeoutMs: null,
      startTimeoutMs: null,
      maxRetries,
      status,
      classification: failure(status, message),
      settled,
    };
    return this.#track(this.#finish(attempt, { warnings: [], ...(tool ? { tool } : {}) }, context));
  }

  #track(attempt: Promise<RunResult>): Promise<RunResult> {
    this.#inFlight.add(attempt);
    void attempt.finally(() => this.#inFlight.delete(attempt)).catch(noop);
    return attempt;
  }

  async #finish(
    plain: Attempt,
    call: { warnings: RunWarning[]; tool?: string; step?: CallStep },
    context: RunContext,
  ): Promise<RunResult> {
    const step = call.step ? stepFacts(call.step, plain.status) : undefined;
    const attempt = step ? inCall(plain, step, call.step!) : plain;
    if (!step?.willRetry) context.onPhase?.({ phase: 'done' });
    const answer = attempt.classification.answer;
    const includeThinking = attempt.request.includeThinking === true;
    // Decided before the line is written, so that the line says what the caller received.
    const reply = await this.#fitReply(attempt, step?.willRetry === true, context.replyShare ?? 1);
    const warnings = [...call.warnings, ...reply.warnings];
    const metadata = toRunMetadata(attempt, warnings, { output: reply.outputFile, thinking: reply.thinkingFile });
    await this.#log.record(
      toRunRecord(metadata, {
        ts: this.#clock(),
        batchId: context.batchId ?? null,
        tool: call.tool ?? (context.batchId ? 'ollama_run_many' : 'ollama_run'),
        transition: attempt.settled.transition,
        prompt: attempt.request.prompt,
        output: answer,
        serverPid: process.pid,
        ...(step ? { step } : {}),
        returned: { outputChars: reply.output.length, thinkingChars: includeThinking ? (reply.thinking ?? '').length : null },
      }),
    );
    return { output: reply.output, ...(includeThinking ? { thinking: reply.thinking ?? '' } : {}), metadata };
  }

  /** The answer as the reply carries it. A try the server goes past reaches no caller: left whole. */
  #fitReply(attempt: Attempt, passedOver: boolean, share: number): Promise<FittedReply> {
    const { answer, thinking } = attempt.classification;
    const includeThinking = attempt.request.includeThinking === true;
    if (passedOver) return Promise.resolve({ output: answer, thinking, outputFile: null, thinkingFile: null, warnings: [] });
    return fitReply({ runId: attempt.runId, answer, thinking, includeThinking, share }, this.#answers);
  }
}

function noop(): void {}

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

/**
 * A signal that aborts when either does (with that one's reason), and `unlink` to drop its
 * listeners once the call is over. `AbortSignal.any` does the same with weak references and a
 * finalizer per call: measurably more CPU on every run.
 */
function eitherAborts(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; unlink: () => void } {
  if (a.aborted) return { signal: a, unlink: noop };
  if (b.aborted) return { signal: b, unlink: noop };
  const controller = new AbortController();
  const onA = () => controller.abort(a.reason);
  const onB = () => controller.abort(b.reason);
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  return {
    signal: controller.signal,
    unlink: () => {
      a.removeEventListener('abort', onA);
      b.removeEventListener('abort', onB);
    },
  };
}

/** What an attempt's line and metadata say of its place in the call. */
function stepFacts(step: CallStep, status: RunStatus): StepFacts {
  return {
    chainId: step.chainId,
    chainStep: step.chainStep,
    busyTry: step.busyTry,
    willRetry: step.goesOn(status),
    fallback: step.tried.map(({ model, status, run_id }) => ({ model, status, run_id })),
    busyRetries: step.busyRetries,
  };
}

/**
 * An attempt as its call tells it: a try the server went past escalates nothing (the call goes on);
 * the call's failed result names the models tried before it, and how each ended.
 */
function inCall(attempt: Attempt, facts: StepFacts, step: CallStep): Attempt {
  if (facts.willRetry) {
    return { ...attempt, step: facts, settled: { ...attempt.settled, escalation: { escalate: false, reason: null } } };
  }
  const error = attempt.classification.error;
  if (step.tried.length === 0 || error === undefined || error === null) return { ...attempt, step: facts };
  const before = step.tried.map((t) => `${t.model} (${t.status})`).join(', ');
  const classification = {
    ...attempt.classification,
    error: `models tried before: ${before}; ${attempt.request.model}: ${error}`,
  };
  return { ...attempt, step: facts, classification };
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (waited: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(waited);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function failure(status: RunStatus, error: string): Classification {
  return { status, error, answer: '', thinking: '' };
}
