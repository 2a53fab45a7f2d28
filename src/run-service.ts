import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import type { ModelSettings } from './model-tiers.js';
import { canonicalModelName, isCloudModel, modelKeyOf } from './model-name.js';
import { admit, circuitGate, recordVerdict, viewCircuit, type BreakerSettings, type CircuitView } from './policy/breaker.js';
import { CLOSED } from './policy/breaker-state.js';
import { decideEscalation, type EscalationDecision } from './policy/escalation.js';
import { OUTCOME_POLICY } from './policy/outcome-policy.js';
import type { RunStatus } from './policy/run-status.js';
import { pruneTasks, recordAttempt, retryCountFor } from './policy/task-ledger.js';
import type { RunMetadata, RunResult, RunWarning } from './run-result.js';
import { circuitNotUpdated, unsavedVerdict } from './run-warnings.js';
import { buildRunArgs, type CliRunOptions } from './runner/cli-args.js';
import { classifyOutcome, type Classification } from './runner/classify-outcome.js';
import { runModelProcess, type ModelProcessRequest, type ProcessOutcome } from './runner/model-process.js';
import { SlotLimiter, type ReleaseSlot, type SlotRequest } from './runner/slot-limiter.js';
import type { StateData } from './store/state-schema.js';
import type { StateStore } from './store/state-store.js';
import type { RunLog } from './telemetry/run-log.js';
import { RUN_RECORD_SCHEMA_VERSION, type CircuitTransition, type RunRecord } from './telemetry/run-record.js';

export type { ModelSettings };

/** A validated `ollama_run` call. */
export interface RunRequest extends CliRunOptions {
  readonly model: string;
  readonly prompt: string;
  readonly taskId?: string;
  readonly retryCount?: number;
  readonly maxRetries?: number;
  readonly timeoutMs?: number;
  readonly includeThinking?: boolean;
  /** Let the CLI pull a model that is not installed (skips the preflight check). */
  readonly allowPull?: boolean;
}

export interface RunServiceDeps {
  readonly config: Config;
  readonly store: StateStore;
  readonly log: RunLog;
  /** Epoch ms. Injected so tests and the store agree on time. @default Date.now */
  readonly clock?: () => number;
  /** @default runModelProcess (execa) */
  readonly spawn?: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  /** Environment handed to the CLI. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly onWarning?: (message: string) => void;
  /** Per-model limits. @default the environment's, for every model */
  readonly settingsFor?: (model: string) => ModelSettings;
  /** Checks a model is installed before spawning (OLLAMA_MCP_PREFLIGHT). @default none */
  readonly preflight?: (model: string) => Promise<PreflightResult>;
}

export interface RunContext {
  /** Aborts the run (client cancel, server shutdown): the process is killed, the slot freed. */
  readonly signal?: AbortSignal;
  /** Set for the jobs of one `ollama_run_many` call; logged as `batch_id`. */
  readonly batchId?: string;
  /** Epoch ms: the run's timeout is cut so it ends by then (a batch deadline); it then ends as a timeout. */
  readonly deadlineAt?: number;
  /** Updated as the attempt moves along, for progress notifications. */
  readonly live?: LiveRun;
}

/** Where an attempt is, for heartbeats. Mutated by the run service only. */
export interface LiveRun {
  /** `waiting_for_probe`: the model's circuit is half-open and this call waits for the probe run's verdict. */
  phase: 'starting' | 'queued' | 'waiting_for_probe' | 'running' | 'finishing' | 'done';
  /** 1 = next in line; 0 when not waiting. */
  queuePosition: () => number;
  /** performance.now() when the model process started. */
  runningSince: number | null;
  /** stdout bytes received so far. */
  outputBytes: number;
}

export function newLiveRun(): LiveRun {
  return { phase: 'starting', queuePosition: () => 0, runningSince: null, outputBytes: 0 };
}

/** Is the model installed? `unknown`: the list could not be read, so the run goes ahead and speaks for itself. */
export type PreflightResult =
  | { readonly kind: 'installed' }
  | { readonly kind: 'missing'; readonly installed: readonly string[] }
  | { readonly kind: 'unknown'; readonly reason: string };

/** Time a half-open probe keeps its lease beyond its own timeout and kill grace. */
const PROBE_LEASE_MARGIN_MS = 5_000;
/**
 * How often a call waiting for a probe re-reads the circuit (an unlocked, cached read): the probe
 * may run in another server process sharing the state dir, or its server may have died.
 */
const PROBE_POLL_MS = 200;
/** Prune old task entries at most this often (pruning scans every entry). */
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const ERROR_TEXT_MAX = 500;

interface Settled {
  readonly retryCount: number;
  readonly escalation: EscalationDecision;
  readonly circuit: CircuitView;
  readonly transition: CircuitTransition;
}

/** Everything known about one attempt when it is written up. */
interface Attempt {
  readonly runId: string;
  readonly request: RunRequest;
  readonly context: RunContext;
  readonly timeoutMs: number | null;
  readonly maxRetries: number;
  readonly status: RunStatus;
  readonly settled: Settled;
  readonly classification: Classification;
  readonly outcome?: ProcessOutcome;
  readonly queueMs?: number;
  readonly tool?: string;
}

type Admission =
  | { readonly admitted: true; readonly transition: CircuitTransition }
  /** Another call's half-open probe is in flight: wait for its verdict, then ask again. */
  | { readonly admitted: false; readonly probeInFlight: true }
  | {
      readonly admitted: false;
      readonly probeInFlight?: false;
      readonly status: 'circuit_open' | 'blocked';
      readonly settled: Settled;
      readonly error: string;
    };

/** The end of `#takeTurn`: a granted slot to spawn in, or the call's finished result. */
type Turn =
  | { readonly go: true; readonly release: ReleaseSlot; readonly transition: CircuitTransition; readonly queueMs: number }
  | { readonly go: false; readonly result: RunResult };

/** What every written-up attempt of a call shares. */
interface AttemptBase {
  readonly runId: string;
  readonly request: RunRequest;
  readonly context: RunContext;
  readonly timeoutMs: number;
  readonly maxRetries: number;
}

/**
 * One `ollama_run` attempt from admission to its runs.jsonl line: preflight, circuit admission,
 * the concurrency queues, the CLI process, classification, the ledger and circuit update (one
 * locked transaction), the log line and the result. Every path, rejections included, ends in
 * `#finish`, so every attempt is logged exactly once and every result has the same shape.
 */
export class RunService {
  /** The server-wide concurrency limit (OLLAMA_MCP_CONCURRENCY). */
  readonly limiter: SlotLimiter;
  readonly #modelLimiters = new Map<string, SlotLimiter>();
  readonly #config: Config;
  readonly #store: StateStore;
  readonly #log: RunLog;
  readonly #clock: () => number;
  readonly #spawn: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #warn: (message: string) => void;
  readonly #settingsFor: (model: string) => ModelSettings;
  readonly #preflight: ((model: string) => Promise<PreflightResult>) | undefined;
  readonly #inFlight = new Set<Promise<RunResult>>();
  readonly #shutdown = new AbortController();
  /** Per model: calls waiting for a half-open probe's verdict, woken when a run of that model settles here. */
  readonly #probeWaiters = new Map<string, Set<() => void>>();
  /** Warnings of attempts not yet finished, by run id (taken by `#finish`). */
  readonly #warnings = new Map<string, RunWarning[]>();
  #admissions: Promise<void> = Promise.resolve();

  constructor(deps: RunServiceDeps) {
    this.#config = deps.config;
    this.#store = deps.store;
    this.#log = deps.log;
    this.#clock = deps.clock ?? Date.now;
    this.#spawn = deps.spawn ?? runModelProcess;
    this.#env = { ...(deps.env ?? process.env), ...(deps.config.ollamaHost ? { OLLAMA_HOST: deps.config.ollamaHost } : {}) };
    this.#warn = deps.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    const defaults: ModelSettings = {
      timeoutMs: deps.config.timeoutMs,
      maxRetries: deps.config.maxRetries,
      breakerThreshold: deps.config.breakerThreshold,
      breakerCooldownMs: deps.config.breakerCooldownMs,
      concurrency: null,
      source: null,
    };
    this.#settingsFor = deps.settingsFor ?? (() => defaults);
    this.#preflight = deps.preflight;
    this.limiter = new SlotLimiter(deps.config.concurrency);
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
    const signal = context.signal ? AbortSignal.any([context.signal, this.#shutdown.signal]) : this.#shutdown.signal;
    return this.#track(this.#run(request, { ...context, signal }));
  }

  /** An attempt refused before anything ran because its arguments were invalid: logged, never spawned. */
  rejectInvalid(rawArgs: unknown, message: string, context: RunContext & { tool?: string } = {}): Promise<RunResult> {
    const args = (typeof rawArgs === 'object' && rawArgs !== null ? rawArgs : {}) as Record<string, unknown>;
    const text = (value: unknown, max: number) => (typeof value === 'string' ? value.slice(0, max) : '');
    const taskId = text(args.task_id, 200);
    const request: RunRequest = {
      model: text(args.model, 200),
      prompt: text(args.prompt, 10_000_000),
      ...(taskId ? { taskId } : {}),
    };
    const maxRetries = typeof args.max_retries === 'number' ? args.max_retries : this.#config.maxRetries;
    const retryCount = typeof args.retry_count === 'number' ? args.retry_count : 0;
    return this.#refuse(request, context, 'invalid_input', message, maxRetries, retryCount, context.tool);
  }

  /** A batch job that never started because the batch deadline passed: logged, never spawned. */
  notStarted(request: RunRequest, context: RunContext): Promise<RunResult> {
    const maxRetries = request.maxRetries ?? this.#settingsFor(request.model).maxRetries;
    const message = 'the batch deadline passed before this job started';
    return this.#refuse(request, context, 'not_started', message, maxRetries, request.retryCount ?? 0);
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
    return this.#track(
      this.#finish({
        runId: randomUUID(),
        request,
        context,
        timeoutMs: null,
        maxRetries,
        status,
        classification: failure(status, message),
        settled: this.#unsettled(retryCount, { escalate: false, reason: null }),
        ...(tool ? { tool } : {}),
      }),
    );
  }

  #track(attempt: Promise<RunResult>): Promise<RunResult> {
    this.#inFlight.add(attempt);
    void attempt.finally(() => this.#inFlight.delete(attempt)).catch(noop);
    return attempt;
  }

  async #run(request: RunRequest, context: RunContext): Promise<RunResult> {
    const runId = randomUUID();
    const modelKey = canonicalModelName(request.model);
    const settings = this.#settingsFor(request.model);
    const breaker: BreakerSettings = { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs };
    const timeoutMs = request.timeoutMs ?? settings.timeoutMs;
    const maxRetries = request.maxRetries ?? settings.maxRetries;
    const live = context.live;
    const base: AttemptBase = { runId, request, context, timeoutMs, maxRetries };
    const settle = async (status: RunStatus, transition: CircuitTransition) => {
      try {
        return await this.#settle({ modelKey, runId, status, request, maxRetries, breaker, transition });
      } finally {
        // This may have been the probe others wait for: let them read its verdict now.
        this.#wakeProbeWaiters(modelKey);
      }
    };

    // 0. Is the model installed? A missing one fails fast instead of starting a multi-GB pull.
    if (this.#preflight && !request.allowPull && !isCloudModel(request.model)) {
      const check = await this.#preflight(request.model);
      if (check.kind === 'missing') {
        const installed = check.installed.length > 0 ? check.installed.join(', ') : 'none';
        const error = `model "${request.model}" is not installed (installed: ${installed}). Pull it with \`ollama pull ${request.model}\`, or pass allow_pull: true to let this run pull it.`;
        return this.#finish({
          ...base,
          status: 'model_not_found',
          classification: failure('model_not_found', error),
          settled: await settle('model_not_found', null),
        });
      }
    }

    // 1. Circuit admission, 2. a place in the concurrency queues, and the circuit again once the
    //    slot is granted (it may have opened while the call waited in line).
    const turn = await this.#takeTurn({ base, modelKey, settings, breaker, settle });
    if (!turn.go) return turn.result;
    const { release, queueMs } = turn;

    // 3. The model process, within the timeout (cut short by a batch deadline, if any).
    const effectiveTimeoutMs =
      context.deadlineAt === undefined ? timeoutMs : Math.max(1, Math.min(timeoutMs, context.deadlineAt - this.#clock()));
    if (live) {
      live.phase = 'running';
      live.queuePosition = () => 0;
      live.runningSince = performance.now();
    }
    let outcome: ProcessOutcome;
    try {
      outcome = await this.#spawn({
        bin: this.#config.ollamaBin,
        args: buildRunArgs(request.model, request),
        prompt: request.prompt,
        env: this.#env,
        timeoutMs: effectiveTimeoutMs,
        killGraceMs: this.#config.killGraceMs,
        maxOutputBytes: this.#config.maxOutputBytes,
        ...(context.signal ? { signal: context.signal } : {}),
        ...(live ? { onOutput: (bytes: number) => void (live.outputBytes = bytes) } : {}),
      });
    } catch (error) {
      release();
      throw error;
    }

    // 4. What it means, for the task, the circuit and the caller. The slot is freed only once the
    //    verdict is recorded, so the next call in line re-checks a circuit this run may have opened.
    if (live) live.phase = 'finishing';
    const classification = classifyOutcome(outcome);
    let settled: Settled;
    try {
      settled = await settle(classification.status, turn.transition);
    } finally {
      release();
    }
    return this.#finish({
      ...base,
      timeoutMs: effectiveTimeoutMs,
      status: classification.status,
      classification,
      outcome,
      queueMs,
      settled,
    });
  }

  /**
   * Circuit admission, a place in the concurrency queues, and the circuit checked again once the
   * slot is granted, until the call may spawn (`go`) or has its result. A call that meets another
   * call's half-open probe waits for the probe's verdict, holding no slot, then goes through
   * admission again: it runs if the probe closed the circuit and is refused if it reopened it. No
   * call is refused merely because a probe is in flight.
   */
  async #takeTurn(a: {
    base: AttemptBase;
    modelKey: string;
    settings: ModelSettings;
    breaker: BreakerSettings;
    settle: (status: RunStatus, transition: CircuitTransition) => Promise<Settled>;
  }): Promise<Turn> {
    const { base, modelKey, breaker } = a;
    const { runId, request, context, timeoutMs } = base;
    const live = context.live;
    // Cancel, shutdown and (for a batch job) the batch deadline end every kind of waiting.
    const waitSignal = queueSignal(context, this.#clock());
    const startedAt = performance.now();
    const waitedMs = () => Math.round(performance.now() - startedAt);
    let transition: CircuitTransition = null;
    let waited = false;
    let probeWaitUntil: number | null = null;
    const done = async (status: RunStatus, error: string, settled: Settled): Promise<Turn> => ({
      go: false,
      result: await this.#finish({
        ...base,
        status,
        classification: failure(status, error),
        settled,
        ...(waited ? { queueMs: waitedMs() } : {}),
      }),
    });
    const stopped = async (waitingFor: string): Promise<Turn> => {
      if (live) live.phase = 'finishing';
      const late = context.deadlineAt !== undefined && this.#clock() >= context.deadlineAt;
      const status = late ? 'not_started' : 'cancelled';
      const error = late
        ? `the batch deadline passed while this job waited for ${waitingFor}`
        : `cancelled while waiting for ${waitingFor}`;
      return done(status, error, await a.settle(status, transition));
    };

    for (;;) {
      // Admissions are taken one at a time so calls reach the FIFO queues in the order they
      // arrived, whatever their I/O timing.
      const turn = this.#admissions.then(async () => {
        const admission = await this.#admit(modelKey, runId, timeoutMs, request, breaker);
        return admission.admitted ? { ...admission, slots: this.#requestSlots(modelKey, a.settings, waitSignal) } : admission;
      });
      this.#admissions = turn.then(noop, noop);
      const admission = await turn;
      let verdict: Exclude<Admission, { admitted: true }>;
      if (!admission.admitted) verdict = admission;
      else {
        waited = true;
        transition = admission.transition ?? transition;
        if (live) {
          live.phase = 'queued';
          live.queuePosition = admission.slots.position;
        }
        let release: ReleaseSlot;
        try {
          release = await admission.slots.granted;
        } catch {
          return stopped('a concurrency slot');
        }
        // The circuit may have opened while this call stood in line: check it again before
        // spawning (while it is closed, an unlocked read of the cached state).
        const recheck = await this.#admit(modelKey, runId, timeoutMs, request, breaker);
        if (recheck.admitted) return { go: true, release, transition: recheck.transition ?? transition, queueMs: waitedMs() };
        release(); // not spawning now: the slot goes to the next in line, perhaps another model's call
        verdict = recheck;
      }
      if (verdict.probeInFlight) {
        waited = true;
        probeWaitUntil ??= this.#clock() + timeoutMs;
        if (live) {
          live.phase = 'waiting_for_probe';
          live.queuePosition = () => 0;
        }
        const outcome = await this.#waitForProbe(modelKey, runId, waitSignal, probeWaitUntil);
        if (outcome === 'settled') continue;
        if (outcome === 'aborted') return stopped("the model's probe run");
        const settled = await this.#probeWaitTimedOut(modelKey, runId, request, breaker);
        const retry =
          settled.circuit.retry_after_seconds === null ? '' : ` Retry in about ${settled.circuit.retry_after_seconds} s.`;
        const error = `this call waited its whole timeout (${Math.round(timeoutMs / 1000)} s) for the model's half-open probe run, which is still in flight; the probe's verdict decides whether the model takes runs again.${retry}`;
        return done('circuit_open', error, settled);
      }
      const error =
        probeWaitUntil !== null && verdict.status === 'circuit_open'
          ? `the model's probe run failed while this call waited for it: ${verdict.error}`
          : verdict.error;
      return done(verdict.status, error, verdict.settled);
    }
  }

  /**
   * Wait until the model's in-flight probe has a verdict: woken at once when a run of the model
   * settles in this process, and polling the (cached, unlocked) state for a probe in another
   * process or one whose lease ran out (its server died). `settled` means: ask for admission again.
   */
  async #waitForProbe(
    modelKey: string,
    runId: string,
    signal: AbortSignal | undefined,
    until: number,
  ): Promise<'settled' | 'aborted' | 'timed_out'> {
    for (;;) {
      if (signal?.aborted) return 'aborted';
      let breakerState;
      try {
        breakerState = (await this.#store.snapshot()).breakers[modelKey] ?? CLOSED;
      } catch {
        return 'settled'; // admission reads the state again and says what is wrong
      }
      const now = this.#clock();
      if (circuitGate(breakerState, now, runId).kind !== 'wait_for_probe') return 'settled';
      if (now >= until) return 'timed_out';
      await this.#nextProbeCheck(modelKey, signal, Math.min(PROBE_POLL_MS, until - now));
    }
  }

  /** Resolves when a run of the model settles here, after `ms`, or on abort, whichever comes first. */
  #nextProbeCheck(modelKey: string, signal: AbortSignal | undefined, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.#probeWaiters.get(modelKey);
      if (!waiters) {
        waiters = new Set();
        this.#probeWaiters.set(modelKey, waiters);
      }
      const set = waiters;
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        set.delete(wake);
        if (set.size === 0 && this.#probeWaiters.get(modelKey) === set) this.#probeWaiters.delete(modelKey);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
      set.add(wake);
    });
  }

  #wakeProbeWaiters(modelKey: string): void {
    for (const wake of [...(this.#probeWaiters.get(modelKey) ?? [])]) wake();
  }

  /** A call whose own timeout ran out while the probe was still in flight: recorded for its task, not escalated. */
  async #probeWaitTimedOut(modelKey: string, runId: string, request: RunRequest, breaker: BreakerSettings): Promise<Settled> {
    const noEscalation: EscalationDecision = { escalate: false, reason: null };
    try {
      return await this.#store.transact(taskScope(request), (state): Settled => {
        const now = this.#clock();
        const retryCount = this.#recordTask(state, request, runId, 'circuit_open', null, now);
        const circuit = viewCircuit(state.breakers[modelKey] ?? CLOSED, now, breaker);
        return { retryCount, escalation: noEscalation, circuit, transition: null };
      });
    } catch (error) {
      this.#warn(`ledger not updated for run ${runId}: ${(error as Error).message}`);
      return this.#unsettled(request.retryCount ?? 0, noEscalation);
    }
  }

  /** A slot of the model's own limit (if its tier sets one), then one of the server's, in that order. */
  #requestSlots(modelKey: string, settings: ModelSettings, signal: AbortSignal | undefined): SlotRequest {
    if (settings.concurrency === null) return this.limiter.request(signal);
    let modelLimiter = this.#modelLimiters.get(modelKey);
    if (!modelLimiter || modelLimiter.limit !== settings.concurrency) {
      modelLimiter = new SlotLimiter(settings.concurrency);
      this.#modelLimiters.set(modelKey, modelLimiter);
    }
    const model = modelLimiter.request(signal);
    let global: SlotRequest | null = null;
    const granted = model.granted.then(async (releaseModel) => {
      global = this.limiter.request(signal);
      try {
        const releaseGlobal = await global.granted;
        return () => {
          releaseGlobal();
          releaseModel();
        };
      } catch (error) {
        releaseModel();
        throw error;
      }
    });
    return { granted, position: () => model.position() + (global?.position() ?? 0) };
  }

  async #admit(
    modelKey: string,
    runId: string,
    timeoutMs: number,
    request: RunRequest,
    settings: BreakerSettings,
  ): Promise<Admission> {
    const blocking = this.#config.escalationMode === 'block' && request.taskId !== undefined;
    try {
      const snapshot = await this.#store.snapshot(taskScope(request));
      const task = request.taskId === undefined ? undefined : snapshot.tasks[request.taskId];
      const mayBlock = blocking && task?.escalated === true;
      if (!mayBlock && (snapshot.breakers[modelKey] ?? CLOSED).state === 'closed') return { admitted: true, transition: null };
      // A probe in flight: nothing to write, so no lock (waiters poll this path).
      const gate = circuitGate(snapshot.breakers[modelKey] ?? CLOSED, this.#clock(), runId);
      if (!mayBlock && gate.kind === 'wait_for_probe') return { admitted: false, probeInFlight: true };
      const leaseMs = timeoutMs + this.#config.killGraceMs + PROBE_LEASE_MARGIN_MS;
      return await this.#store.transact(taskScope(request), (state): Admission => {
        const now = this.#clock();
        const entry = request.taskId === undefined ? undefined : state.tasks[request.taskId];
        if (blocking && entry?.escalated) {
          const reason = entry.escalationReason ?? 'max_retries_exceeded';
          const retryCount = this.#recordTask(state, request, runId, 'blocked', reason, now);
          return {
            admitted: false,
            status: 'blocked',
            error: `task "${request.taskId}" escalated earlier (${reason}) and OLLAMA_MCP_ESCALATION=block refuses further runs until it is reset with ollama_reset`,
            settled: {
              retryCount,
              escalation: { escalate: true, reason },
              circuit: viewCircuit(state.breakers[modelKey] ?? CLOSED, now, settings),
              transition: null,
            },
          };
        }
        const decision = admit(state.breakers[modelKey] ?? CLOSED, now, runId, leaseMs);
        state.breakers[modelKey] = decision.next;
        if (decision.admitted) return { admitted: true, transition: decision.transition };
        if (decision.reason === 'probe_in_flight') return { admitted: false, probeInFlight: true };
        const retryCount = this.#recordTask(state, request, runId, 'circuit_open', 'circuit_open', now);
        const circuit = viewCircuit(decision.next, now, settings);
        return {
          admitted: false,
          status: 'circuit_open',
          error: circuitOpenMessage(circuit),
          settled: { retryCount, escalation: { escalate: true, reason: 'circuit_open' }, circuit, transition: null },
        };
      });
    } catch (error) {
      return this.#admitUnsaved(modelKey, runId, timeoutMs, request, settings, error);
    }
  }

  /**
   * The circuit could not be updated at admission: judge it from the last saved state (an open
   * circuit still refuses), and say so. The ledger is a safety net, not a gate: if it cannot even
   * be read, the run goes ahead.
   */
  async #admitUnsaved(
    modelKey: string,
    runId: string,
    timeoutMs: number,
    request: RunRequest,
    settings: BreakerSettings,
    error: unknown,
  ): Promise<Admission> {
    const message = (error as Error).message;
    this.#warn(`circuit of ${modelKey} not updated at admission of run ${runId}: ${message}`);
    let snapshot: StateData;
    try {
      snapshot = await this.#store.snapshot(taskScope(request));
    } catch {
      this.#noteWarning(runId, circuitNotUpdated(modelKey, message, true));
      return { admitted: true, transition: null };
    }
    const now = this.#clock();
    const entry = request.taskId === undefined ? undefined : snapshot.tasks[request.taskId];
    if (this.#config.escalationMode === 'block' && entry?.escalated) {
      const reason = entry.escalationReason ?? 'max_retries_exceeded';
      this.#noteWarning(runId, circuitNotUpdated(modelKey, message, false));
      return {
        admitted: false,
        status: 'blocked',
        error: `task "${request.taskId}" escalated earlier (${reason}) and OLLAMA_MCP_ESCALATION=block refuses further runs until it is reset with ollama_reset`,
        settled: {
          retryCount: retryCountFor(entry, request.retryCount),
          escalation: { escalate: true, reason },
          circuit: viewCircuit(snapshot.breakers[modelKey] ?? CLOSED, now, settings),
          transition: null,
        },
      };
    }
    const leaseMs = timeoutMs + this.#config.killGraceMs + PROBE_LEASE_MARGIN_MS;
    const decision = admit(snapshot.breakers[modelKey] ?? CLOSED, now, runId, leaseMs);
    // Another call's probe is in flight: wait for its verdict (or its lease to run out) as usual.
    if (!decision.admitted && decision.reason === 'probe_in_flight') return { admitted: false, probeInFlight: true };
    this.#noteWarning(runId, circuitNotUpdated(modelKey, message, decision.admitted));
    if (decision.admitted) return { admitted: true, transition: null };
    const circuit = viewCircuit(decision.next, now, settings);
    return {
      admitted: false,
      status: 'circuit_open',
      error: circuitOpenMessage(circuit),
      settled: {
        retryCount: retryCountFor(entry, request.retryCount),
        escalation: { escalate: true, reason: 'circuit_open' },
        circuit,
        transition: null,
      },
    };
  }

  #noteWarning(runId: string, warning: RunWarning): void {
    const list = this.#warnings.get(runId);
    // The circuit is checked twice (admission, leaving the queue): say each thing once.
    if (list?.some((w) => w.kind === warning.kind)) return;
    if (list) list.push(warning);
    else this.#warnings.set(runId, [warning]);
  }

  /** Record the attempt's outcome in the task ledger and the model's circuit, in one transaction. */
  async #settle(a: {
    modelKey: string;
    runId: string;
    status: RunStatus;
    request: RunRequest;
    maxRetries: number;
    breaker: BreakerSettings;
    transition: CircuitTransition;
  }): Promise<Settled> {
    const verdict = OUTCOME_POLICY[a.status].breaker;
    /** Reads `state` only; the caller applies `nextBreaker` and the task entry. */
    const decide = (state: StateData, now: number) => {
      const entry = a.request.taskId === undefined ? undefined : state.tasks[a.request.taskId];
      const retryCount = retryCountFor(entry, a.request.retryCount);
      const step = recordVerdict(state.breakers[a.modelKey] ?? CLOSED, verdict, now, a.runId, a.breaker);
      const escalation = decideEscalation({
        status: a.status,
        retryCount,
        maxRetries: a.maxRetries,
        openedCircuit: step.transition === 'opened' || step.transition === 'reopened',
      });
      const settled: Settled = {
        retryCount,
        escalation,
        circuit: viewCircuit(step.next, now, a.breaker),
        transition: step.transition ?? a.transition,
      };
      return { settled, nextBreaker: step.next };
    };
    try {
      if (a.request.taskId === undefined) {
        // Without a task only the circuit may change: skip the lock when it would not.
        const snapshot = await this.#store.snapshot();
        const breaker = snapshot.breakers[a.modelKey] ?? CLOSED;
        const changesNothing =
          breaker.state === 'closed' && (verdict === 'neutral' || (verdict === 'success' && breaker.consecutiveFailures === 0));
        if (changesNothing) return decide(snapshot, this.#clock()).settled;
      }
      const { settled, prunedAt } = await this.#store.transact(taskScope(a.request), (state) => {
        const now = this.#clock();
        const { settled, nextBreaker } = decide(state, now);
        state.breakers[a.modelKey] = nextBreaker;
        this.#recordTask(state, a.request, a.runId, a.status, settled.escalation.reason, now);
        return { settled, prunedAt: state.prunedAt };
      });
      // The attempt is recorded: a failed prune must not be mistaken for a lost update.
      await this.#pruneIfDue(prunedAt).catch((error: Error) => this.#warn(`pruning the task ledger failed: ${error.message}`));
      return settled;
    } catch (error) {
      return this.#settleUnsaved(a, (error as Error).message);
    }
  }

  /** The ledger could not be updated: count from what can still be read, and say so in the result. */
  async #settleUnsaved(
    a: { modelKey: string; runId: string; status: RunStatus; request: RunRequest; maxRetries: number; breaker: BreakerSettings },
    error: string,
  ): Promise<Settled> {
    this.#warn(`ledger not updated for run ${a.runId}: ${error}`);
    let snapshot: StateData | null = null;
    try {
      snapshot = await this.#store.snapshot(taskScope(a.request));
    } catch (readError) {
      this.#warn(`ledger not readable either: ${(readError as Error).message}`);
    }
    const verdict = unsavedVerdict({
      ledger: snapshot ? { entry: a.request.taskId === undefined ? undefined : snapshot.tasks[a.request.taskId] } : 'unreadable',
      taskId: a.request.taskId,
      status: a.status,
      callerRetryCount: a.request.retryCount,
      maxRetries: a.maxRetries,
      error,
    });
    this.#noteWarning(a.runId, verdict.warning);
    if (!snapshot) return this.#unsettled(verdict.retryCount, verdict.escalation);
    const circuit = viewCircuit(snapshot.breakers[a.modelKey] ?? CLOSED, this.#clock(), a.breaker);
    return { retryCount: verdict.retryCount, escalation: verdict.escalation, circuit, transition: null };
  }

  /** What is said of an attempt that touched neither the ledger nor a circuit. */
  #unsettled(retryCount: number, escalation: EscalationDecision): Settled {
    const settings: BreakerSettings = { threshold: this.#config.breakerThreshold, cooldownMs: this.#config.breakerCooldownMs };
    return { retryCount, escalation, circuit: viewCircuit(CLOSED, this.#clock(), settings), transition: null };
  }

  /**
   * Drop task entries untouched for OLLAMA_MCP_TASK_TTL_DAYS, and the oldest beyond
   * OLLAMA_MCP_MAX_TASKS, at most once an hour (it reads every ledger shard).
   */
  async #pruneIfDue(lastPrunedAt: number): Promise<void> {
    if (this.#clock() - lastPrunedAt < PRUNE_EVERY_MS) return;
    await this.#store.transact('all', (state) => {
      const now = this.#clock();
      if (now - state.prunedAt < PRUNE_EVERY_MS) return; // another process just did it
      state.tasks = pruneTasks(state.tasks, now, { maxAgeMs: this.#config.taskTtlMs, maxEntries: this.#config.maxTasks });
      state.prunedAt = now;
    });
  }

  /** Add one attempt to the task's ledger; returns its retry_count. */
  #recordTask(
    state: StateData,
    request: RunRequest,
    runId: string,
    status: RunStatus,
    escalationReason: EscalationDecision['reason'],
    now: number,
  ): number {
    if (request.taskId === undefined) return request.retryCount ?? 0;
    const entry = state.tasks[request.taskId];
    const retryCount = retryCountFor(entry, request.retryCount);
    state.tasks[request.taskId] = recordAttempt(entry, {
      status,
      retryCount,
      runId,
      model: request.model,
      escalationReason,
      now,
    });
    return retryCount;
  }

  async #finish(attempt: Attempt): Promise<RunResult> {
    const { request, settled, outcome, status, classification } = attempt;
    if (attempt.context.live) attempt.context.live.phase = 'done';
    const policy = OUTCOME_POLICY[status];
    const errorText = classification.error?.slice(0, ERROR_TEXT_MAX) ?? null;
    const warnings = this.#warnings.get(attempt.runId) ?? [];
    this.#warnings.delete(attempt.runId);
    const metadata: RunMetadata = {
      status,
      ok: policy.ok,
      escalate: settled.escalation.escalate,
      escalation_reason: settled.escalation.reason,
      retryable: policy.retryable && !settled.escalation.escalate,
      model: request.model,
      task_id: request.taskId ?? null,
      run_id: attempt.runId,
      retry_count: settled.retryCount,
      max_retries: attempt.maxRetries,
      retries_left:
        settled.escalation.escalate && attempt.maxRetries > 0 ? 0 : retriesLeft(attempt.maxRetries, settled.retryCount, status),
      exit_code: outcome?.exitCode ?? null,
      signal: outcome?.signal ?? null,
      timed_out: outcome?.timedOut ?? false,
      truncated: outcome?.truncated ?? false,
      duration_ms: outcome?.durationMs ?? 0,
      queue_ms: attempt.queueMs ?? 0,
      timeout_ms: attempt.timeoutMs,
      prompt_chars: request.prompt.length,
      output_chars: classification.answer.length,
      thinking_chars: classification.thinking.length,
      circuit: settled.circuit,
      error: errorText === null ? null : { kind: status, message: errorText },
      warnings,
    };
    const record: RunRecord = {
      v: RUN_RECORD_SCHEMA_VERSION,
      ts: new Date(this.#clock()).toISOString(),
      run_id: attempt.runId,
      batch_id: attempt.context.batchId ?? null,
      tool: attempt.tool ?? (attempt.context.batchId ? 'ollama_run_many' : 'ollama_run'),
      model: request.model,
      model_key: modelKeyOf(request.model),
      task_id: metadata.task_id,
      status,
      exit_code: metadata.exit_code,
      signal: metadata.signal,
      timed_out: metadata.timed_out,
      truncated: metadata.truncated,
      duration_ms: metadata.duration_ms,
      queue_ms: metadata.queue_ms,
      timeout_ms: metadata.timeout_ms,
      prompt_chars: metadata.prompt_chars,
      output_chars: metadata.output_chars,
      thinking_chars: metadata.thinking_chars,
      retry_count: metadata.retry_count,
      max_retries: metadata.max_retries,
      escalate: metadata.escalate,
      escalation_reason: metadata.escalation_reason,
      circuit: { ...settled.circuit, transition: settled.transition },
      error: errorText,
      server_pid: process.pid,
      warnings,
      prompt: request.prompt,
      output: classification.answer,
    };
    await this.#log.record(record);
    return {
      output: classification.answer,
      ...(request.includeThinking ? { thinking: classification.thinking } : {}),
      metadata,
    };
  }
}

function noop(): void {}

/** Waiting for a slot ends on cancel, and also at a batch deadline (a running job ends by its cut timeout instead). */
function queueSignal(context: RunContext, now: number): AbortSignal | undefined {
  if (context.deadlineAt === undefined) return context.signal;
  const untilDeadline = AbortSignal.timeout(Math.max(0, context.deadlineAt - now));
  return context.signal ? AbortSignal.any([context.signal, untilDeadline]) : untilDeadline;
}

function taskScope(request: RunRequest): string[] {
  return request.taskId === undefined ? [] : [request.taskId];
}

function failure(status: RunStatus, error: string): Classification {
  return { status, error, answer: '', thinking: '' };
}

/**
 * Further attempts the caller may make before a failure escalates: with `max_retries: 3`, a first
 * failed attempt leaves 3 (retry_count 1, 2 and 3; the last escalates if it fails too).
 */
function retriesLeft(maxRetries: number, retryCount: number, status: RunStatus): number | null {
  if (maxRetries === 0) return null;
  const policy = OUTCOME_POLICY[status];
  const nextRetryCount = policy.ok ? 0 : policy.countsAsTaskFailure ? retryCount + 1 : retryCount;
  return Math.min(maxRetries, Math.max(0, maxRetries - nextRetryCount + 1));
}

function circuitOpenMessage(circuit: CircuitView): string {
  const wait = circuit.retry_after_seconds === null ? 'shortly' : `in ${circuit.retry_after_seconds} s`;
  return `the model's circuit is open after ${circuit.consecutive_failures} failures in a row; it will accept a run again ${wait}`;
}
