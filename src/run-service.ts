import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { canonicalModelName } from './model-name.js';
import { admit, recordVerdict, viewCircuit, type BreakerSettings, type CircuitView } from './policy/breaker.js';
import { CLOSED } from './policy/breaker-state.js';
import { decideEscalation, type EscalationDecision } from './policy/escalation.js';
import { OUTCOME_POLICY } from './policy/outcome-policy.js';
import type { RunStatus } from './policy/run-status.js';
import { pruneTasks, recordAttempt, retryCountFor } from './policy/task-ledger.js';
import type { RunMetadata, RunResult } from './run-result.js';
import { buildRunArgs, type CliRunOptions } from './runner/cli-args.js';
import { classifyOutcome, type Classification } from './runner/classify-outcome.js';
import { runModelProcess, type ModelProcessRequest, type ProcessOutcome } from './runner/model-process.js';
import { SlotLimiter } from './runner/slot-limiter.js';
import type { StateData } from './store/state-schema.js';
import type { StateStore } from './store/state-store.js';
import type { RunLog } from './telemetry/run-log.js';
import { RUN_RECORD_SCHEMA_VERSION, type CircuitTransition, type RunRecord } from './telemetry/run-record.js';

/** A validated `ollama_run` call. */
export interface RunRequest extends CliRunOptions {
  readonly model: string;
  readonly prompt: string;
  readonly taskId?: string;
  readonly retryCount?: number;
  readonly maxRetries?: number;
  readonly timeoutMs?: number;
  readonly includeThinking?: boolean;
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
}

export interface RunContext {
  /** Aborts the run (client cancel, server shutdown): the process is killed, the slot freed. */
  readonly signal?: AbortSignal;
}

/** Time a half-open probe keeps its lease beyond its own timeout and kill grace. */
const PROBE_LEASE_MARGIN_MS = 5_000;
/** Prune old task entries at most this often (pruning scans every entry). */
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const ERROR_TEXT_MAX = 500;

interface Settled {
  readonly retryCount: number;
  readonly escalation: EscalationDecision;
  readonly circuit: CircuitView;
  readonly transition: CircuitTransition;
}

/**
 * One `ollama_run` attempt from admission to its runs.jsonl line: circuit admission, the
 * concurrency queue, the CLI process, classification, the ledger and circuit update (one locked
 * transaction), the log line and the result. Every path, rejections included, ends in `#finish`,
 * so every attempt is logged exactly once and every result has the same shape.
 */
export class RunService {
  readonly limiter: SlotLimiter;
  readonly #config: Config;
  readonly #store: StateStore;
  readonly #log: RunLog;
  readonly #clock: () => number;
  readonly #spawn: (request: ModelProcessRequest) => Promise<ProcessOutcome>;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #warn: (message: string) => void;

  constructor(deps: RunServiceDeps) {
    this.#config = deps.config;
    this.#store = deps.store;
    this.#log = deps.log;
    this.#clock = deps.clock ?? Date.now;
    this.#spawn = deps.spawn ?? runModelProcess;
    this.#env = { ...(deps.env ?? process.env), ...(deps.config.ollamaHost ? { OLLAMA_HOST: deps.config.ollamaHost } : {}) };
    this.#warn = deps.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    this.limiter = new SlotLimiter(deps.config.concurrency);
  }

  readonly #inFlight = new Set<Promise<RunResult>>();
  readonly #shutdown = new AbortController();
  #admissions: Promise<void> = Promise.resolve();

  /** Stop every queued and running attempt (server shutdown); later attempts end as cancelled at once. */
  abortAll(): void {
    this.#shutdown.abort();
  }

  /** Attempts started and not yet logged. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Resolves when every attempt started so far has finished and been logged. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  run(request: RunRequest, context: RunContext = {}): Promise<RunResult> {
    const signal = context.signal ? AbortSignal.any([context.signal, this.#shutdown.signal]) : this.#shutdown.signal;
    const attempt = this.#run(request, { signal });
    this.#inFlight.add(attempt);
    void attempt.finally(() => this.#inFlight.delete(attempt)).catch(() => {});
    return attempt;
  }

  async #run(request: RunRequest, context: RunContext): Promise<RunResult> {
    const runId = randomUUID();
    const modelKey = canonicalModelName(request.model);
    const settings = this.#breakerSettings();
    const timeoutMs = request.timeoutMs ?? this.#config.timeoutMs;
    const maxRetries = request.maxRetries ?? this.#config.maxRetries;
    const base = { runId, request, timeoutMs, maxRetries };

    // 1. Circuit admission, then 2. a place in the concurrency queue. Admissions are taken one at
    //    a time so calls reach the FIFO queue in the order they arrived, whatever their I/O timing.
    //    A closed circuit admits without the lock; open and half-open decide under it, so exactly
    //    one process takes the half-open probe.
    const turn = this.#admissions.then(async () => {
      const admission = await this.#admit(modelKey, runId, timeoutMs, request, settings);
      if (admission.rejected) return { rejected: admission.rejected } as const;
      return { rejected: null, transition: admission.transition, slot: this.limiter.request(context.signal) } as const;
    });
    this.#admissions = turn.then(noop, noop);
    const admission = await turn;
    if (admission.rejected) return this.#finish({ ...base, status: 'circuit_open', settled: admission.rejected });
    const { slot } = admission;

    const queuedAt = performance.now();
    let release: () => void;
    try {
      release = await slot.granted;
    } catch {
      const queueMs = Math.round(performance.now() - queuedAt);
      const classification = cancelledBeforeStart();
      const settled = await this.#settle(modelKey, runId, 'cancelled', request, maxRetries, settings, admission.transition);
      return this.#finish({ ...base, status: 'cancelled', classification, queueMs, settled });
    }
    const queueMs = Math.round(performance.now() - queuedAt);

    // 3. The model process.
    let outcome: ProcessOutcome;
    try {
      outcome = await this.#spawn({
        bin: this.#config.ollamaBin,
        args: buildRunArgs(request.model, request),
        prompt: request.prompt,
        env: this.#env,
        timeoutMs,
        killGraceMs: this.#config.killGraceMs,
        maxOutputBytes: this.#config.maxOutputBytes,
        ...(context.signal ? { signal: context.signal } : {}),
      });
    } finally {
      release();
    }

    // 4. What it means, for the task, the circuit and the caller.
    const classification = classifyOutcome(outcome);
    const settled = await this.#settle(modelKey, runId, classification.status, request, maxRetries, settings, admission.transition);
    return this.#finish({ ...base, status: classification.status, classification, outcome, queueMs, settled });
  }

  /** An attempt refused before anything ran because its arguments were invalid: logged, never spawned. */
  async rejectInvalid(rawArgs: unknown, message: string): Promise<RunResult> {
    const args = (typeof rawArgs === 'object' && rawArgs !== null ? rawArgs : {}) as Record<string, unknown>;
    const text = (value: unknown, max: number) => (typeof value === 'string' ? value.slice(0, max) : '');
    const request: RunRequest = { model: text(args.model, 200), prompt: text(args.prompt, 10_000_000) };
    const taskId = text(args.task_id, 200);
    const now = this.#clock();
    return this.#finish({
      runId: randomUUID(),
      request: taskId ? { ...request, taskId } : request,
      timeoutMs: null,
      maxRetries: typeof args.max_retries === 'number' ? args.max_retries : this.#config.maxRetries,
      status: 'invalid_input',
      classification: { status: 'invalid_input', error: message, answer: '', thinking: '' },
      settled: {
        retryCount: typeof args.retry_count === 'number' ? args.retry_count : 0,
        escalation: { escalate: false, reason: null },
        circuit: viewCircuit(CLOSED, now, this.#breakerSettings()),
        transition: null,
      },
    });
  }

  #breakerSettings(): BreakerSettings {
    return { threshold: this.#config.breakerThreshold, cooldownMs: this.#config.breakerCooldownMs };
  }

  async #admit(
    modelKey: string,
    runId: string,
    timeoutMs: number,
    request: RunRequest,
    settings: BreakerSettings,
  ): Promise<{ rejected: Settled | null; transition: CircuitTransition }> {
    try {
      const snapshot = await this.#store.snapshot();
      if ((snapshot.breakers[modelKey] ?? CLOSED).state === 'closed') return { rejected: null, transition: null };
      const leaseMs = timeoutMs + this.#config.killGraceMs + PROBE_LEASE_MARGIN_MS;
      return await this.#store.transact(taskScope(request), (state) => {
        const now = this.#clock();
        const decision = admit(state.breakers[modelKey] ?? CLOSED, now, runId, leaseMs, settings);
        state.breakers[modelKey] = decision.next;
        if (decision.admitted) return { rejected: null, transition: decision.transition };
        const retryCount = this.#recordTask(state, request, runId, 'circuit_open', 'circuit_open', now);
        return {
          rejected: {
            retryCount,
            escalation: { escalate: true, reason: 'circuit_open' },
            circuit: viewCircuit(decision.next, now, settings),
            transition: null,
          },
          transition: null,
        };
      });
    } catch (error) {
      // The ledger is a safety net, not a gate: if it cannot be read, the run still goes ahead.
      this.#warn(`circuit admission skipped for ${modelKey}: ${(error as Error).message}`);
      return { rejected: null, transition: null };
    }
  }

  /** Record the attempt's outcome in the task ledger and the model's circuit, in one transaction. */
  async #settle(
    modelKey: string,
    runId: string,
    status: RunStatus,
    request: RunRequest,
    maxRetries: number,
    settings: BreakerSettings,
    admissionTransition: CircuitTransition,
  ): Promise<Settled> {
    const verdict = OUTCOME_POLICY[status].breaker;
    /** Reads `state` only; the caller applies `nextBreaker` and the task entry. */
    const decide = (state: StateData, now: number) => {
      const entry = request.taskId === undefined ? undefined : state.tasks[request.taskId];
      const retryCount = retryCountFor(entry, request.retryCount);
      const step = recordVerdict(state.breakers[modelKey] ?? CLOSED, verdict, now, runId, settings);
      const escalation = decideEscalation({
        status,
        retryCount,
        maxRetries,
        openedCircuit: step.transition === 'opened' || step.transition === 'reopened',
      });
      const settled: Settled = {
        retryCount,
        escalation,
        circuit: viewCircuit(step.next, now, settings),
        transition: step.transition ?? admissionTransition,
      };
      return { settled, nextBreaker: step.next };
    };
    try {
      const snapshot = await this.#store.snapshot();
      const breaker = snapshot.breakers[modelKey] ?? CLOSED;
      const changesNothing =
        request.taskId === undefined &&
        breaker.state === 'closed' &&
        (verdict === 'neutral' || (verdict === 'success' && breaker.consecutiveFailures === 0));
      if (changesNothing) return decide(snapshot, this.#clock()).settled;
      const settled = await this.#store.transact(taskScope(request), (state) => {
        const now = this.#clock();
        const { settled, nextBreaker } = decide(state, now);
        state.breakers[modelKey] = nextBreaker;
        this.#recordTask(state, request, runId, status, settled.escalation.reason, now);
        return settled;
      });
      await this.#pruneIfDue(snapshot.prunedAt);
      return settled;
    } catch (error) {
      this.#warn(`ledger not updated for run ${runId}: ${(error as Error).message}`);
      const retryCount = request.retryCount ?? 0;
      return {
        retryCount,
        escalation: decideEscalation({ status, retryCount, maxRetries, openedCircuit: false }),
        circuit: viewCircuit(CLOSED, this.#clock(), settings),
        transition: null,
      };
    }
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
    state.tasks[request.taskId] = recordAttempt(entry, { status, retryCount, runId, model: request.model, escalationReason, now });
    return retryCount;
  }

  async #finish(attempt: {
    runId: string;
    request: RunRequest;
    timeoutMs: number | null;
    maxRetries: number;
    status: RunStatus;
    settled: Settled;
    classification?: Classification;
    outcome?: ProcessOutcome;
    queueMs?: number;
  }): Promise<RunResult> {
    const { request, settled, outcome, status } = attempt;
    const classification = attempt.classification ?? circuitOpenRejection(settled.circuit);
    const policy = OUTCOME_POLICY[status];
    const errorText = classification.error?.slice(0, ERROR_TEXT_MAX) ?? null;
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
      retries_left: settled.escalation.escalate && attempt.maxRetries > 0 ? 0 : retriesLeft(attempt.maxRetries, settled.retryCount, status),
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
    };
    const record: RunRecord = {
      v: RUN_RECORD_SCHEMA_VERSION,
      ts: new Date(this.#clock()).toISOString(),
      run_id: attempt.runId,
      batch_id: null,
      tool: 'ollama_run',
      model: request.model,
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

function taskScope(request: RunRequest): string[] {
  return request.taskId === undefined ? [] : [request.taskId];
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

function cancelledBeforeStart(): Classification {
  return { status: 'cancelled', error: 'cancelled while waiting for a concurrency slot', answer: '', thinking: '' };
}

function circuitOpenRejection(circuit: CircuitView): Classification {
  const wait = circuit.retry_after_seconds === null ? 'shortly' : `in ${circuit.retry_after_seconds} s`;
  return {
    status: 'circuit_open',
    error: `the model's circuit is ${circuit.state === 'open' ? 'open' : 'half-open with a probe run in flight'} after ${circuit.consecutive_failures} failures in a row; it will accept a run again ${wait}`,
    answer: '',
    thinking: '',
  };
}
