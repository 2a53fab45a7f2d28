import type { Config } from '../../config/config.js';
import { admit, circuitGate, recordVerdict, viewCircuit, type BreakerSettings } from '../../policy/breaker.js';
import { CLOSED, type BreakerState } from '../../policy/breaker-state.js';
import type { EscalationDecision } from '../../policy/escalation.js';
import { ownEscalation, taskVerdict, type ModelVerdict } from '../../policy/task-verdict.js';
import { OUTCOME_POLICY } from '../../policy/outcome-policy.js';
import type { EscalationReason, RunStatus } from '../../policy/run-status.js';
import {
  pruneClock,
  pruneDue,
  pruneTasks,
  recordAttempt,
  recordedRun,
  retryCountFor,
  type AttemptFacts,
  type TaskLedgerEntry,
} from '../../policy/task-ledger.js';
import type { RunWarning } from '../reply/run-result.js';
import { circuitNotUpdated, unsavedVerdict } from '../reply/run-warnings.js';
import type { OpenAttempt } from '../../store/attempt-journal.js';
import type { StateBackend, StateData } from '../../store/state-backend.js';
import { blockedError, circuitOpenError } from './errors.js';
import type { Limits, RunRequest } from './types.js';
import { ProbeWaiters } from '../queue/probe-waiters.js';
import type { Settled } from './types.js';

/** Time a half-open probe keeps its lease beyond its own limits (start allowance, timeout) and kill grace. */
const PROBE_LEASE_MARGIN_MS = 5_000;

/** One attempt as the ledger sees it. */
export interface LedgerAttempt extends Pick<Limits, 'maxRetries' | 'timeoutMs' | 'startTimeoutMs' | 'breaker'> {
  readonly runId: string;
  readonly modelKey: string;
  readonly request: RunRequest;
  /** Told what the ledger could not do for this attempt. */
  readonly note: (warning: RunWarning) => void;
  /**
   * The models its call tried before it, in order, with their verdicts: the task's verdict of the call
   * is judged from all of them (policy/task-verdict.ts), so a fallback never makes a task escalate
   * sooner nor leaves the call's failure uncounted.
   */
  readonly before: readonly PastVerdict[];
}

/** What the ledger needs of an attempt whose server died (app/attempt/interrupted.ts). */
interface InterruptedAttempt extends Pick<OpenAttempt, 'runId' | 'taskId' | 'model' | 'maxRetries' | 'callerRetryCount'> {
  readonly modelKey: string;
}

/** An earlier model's attempt in the same call. */
export interface PastVerdict extends ModelVerdict {
  readonly model: string;
  readonly runId: string;
}

type Admission =
  | { readonly admitted: true; readonly transition: Settled['transition'] }
  /** Another call's half-open probe is in flight: wait for its verdict, then ask again. */
  | { readonly admitted: false; readonly probeInFlight: true }
  /** The model's circuit refuses runs now: nothing is recorded for the task until the attempt ends (`settleRefusal`). */
  | { readonly admitted: false; readonly probeInFlight?: false; readonly status: 'circuit_open'; readonly error: string }
  /** The task escalated before and block mode refuses it: recorded, the call ends with it. */
  | Blocked;

/** A refusal of a task that escalated before, in block mode (recorded as `blocked` for the task). */
export interface Blocked {
  readonly admitted: false;
  readonly probeInFlight?: false;
  readonly status: 'blocked';
  readonly error: string;
  readonly settled: Settled;
}

interface AttemptLedgerDeps {
  readonly store: StateBackend;
  readonly clock: () => number;
  readonly config: Pick<
    Config,
    'escalationMode' | 'killGraceMs' | 'taskTtlMs' | 'maxTasks' | 'breakerThreshold' | 'breakerCooldownMs'
  >;
  /** Operator warnings (stderr). */
  readonly warn: (message: string) => void;
}

/**
 * The retry ledger and the circuits, per attempt: admission (block mode, the breaker's gate),
 * settling the verdict (one locked transaction, skipped when it would change nothing), and
 * pruning. The ledger is a safety net, not a gate: when it cannot be written the attempt is
 * judged from the last saved state and a warning says so.
 */
export class AttemptLedger {
  readonly #store: StateBackend;
  readonly #clock: () => number;
  readonly #config: AttemptLedgerDeps['config'];
  readonly #warn: (message: string) => void;
  /** Attempts waiting for a model's half-open probe: every settle here wakes those of its model. */
  readonly probes: ProbeWaiters;

  constructor(deps: AttemptLedgerDeps) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#config = deps.config;
    this.#warn = deps.warn;
    this.probes = new ProbeWaiters((modelKey) => this.circuitOf(modelKey), deps.clock);
  }

  /** The model's circuit as last saved (unlocked, cached read). */
  async circuitOf(modelKey: string): Promise<BreakerState> {
    return (await this.#store.snapshot()).breakers[modelKey] ?? CLOSED;
  }

  /**
   * May the attempt run now? A circuit's refusal is recorded for the task only when the attempt
   * ends (`settleRefusal`): whether its call goes on is decided then.
   */
  async admit(a: LedgerAttempt): Promise<Admission> {
    const { request, modelKey, runId } = a;
    const blocking = this.#config.escalationMode === 'block' && request.taskId !== undefined;
    try {
      // Only block mode reads the task at admission: otherwise the circuits alone decide (one read less per run).
      const snapshot = await this.#store.snapshot(blocking ? taskScope(request) : []);
      const task = blocking && request.taskId !== undefined ? snapshot.tasks[request.taskId] : undefined;
      const mayBlock = blocking && task?.escalated === true;
      const circuit = snapshot.breakers[modelKey] ?? CLOSED;
      if (!mayBlock && circuit.state === 'closed') return { admitted: true, transition: null };
      // A probe in flight: nothing to write, so no lock (waiters poll this path).
      if (!mayBlock && circuitGate(circuit, this.#clock(), runId).kind === 'wait_for_probe') {
        return { admitted: false, probeInFlight: true };
      }
      return await this.#store.transact(taskScope(request), (state): Admission => {
        const now = this.#clock();
        const entry = request.taskId === undefined ? undefined : state.tasks[request.taskId];
        if (blocking && entry?.escalated) return this.#recordBlocked(state, a, entry, now);
        const decision = admit(state.breakers[modelKey] ?? CLOSED, now, runId, this.#leaseMs(a));
        state.breakers[modelKey] = decision.next;
        if (decision.admitted) return { admitted: true, transition: decision.transition };
        if (decision.reason === 'probe_in_flight') return { admitted: false, probeInFlight: true };
        return circuitOpen(viewCircuit(decision.next, now, a.breaker));
      });
    } catch (error) {
      return this.#admitUnsaved(a, (error as Error).message);
    }
  }

  /**
   * Block mode: the refusal of an attempt of a task that escalated (recorded as `blocked`), or null when
   * the task may run. For an attempt that ends before its admission (its model is not installed): a
   * blocked task is refused as blocked whatever else is wrong with the call.
   */
  async blocked(a: LedgerAttempt): Promise<Blocked | null> {
    if (this.#config.escalationMode !== 'block' || a.request.taskId === undefined) return null;
    try {
      const snapshot = await this.#store.snapshot(taskScope(a.request));
      if (snapshot.tasks[a.request.taskId]?.escalated !== true) return null;
      return await this.#store.transact(taskScope(a.request), (state) => {
        const entry = state.tasks[a.request.taskId!];
        return entry?.escalated ? this.#recordBlocked(state, a, entry, this.#clock()) : null;
      });
    } catch {
      return null; // judged again at admission, which says what it could not do
    }
  }

  #recordBlocked(state: StateData, a: LedgerAttempt, entry: TaskLedgerEntry, now: number): Blocked {
    const blocked = blockedBy(a, entry, state, now);
    const { retryCount, escalation } = blocked.settled;
    recordTask(state, a, { status: 'blocked', counted: false, retryCount, escalationReason: escalation.reason }, now);
    return blocked;
  }

  /**
   * Record the attempt's outcome in the model's circuit and, unless its call will retry (a busy retry,
   * the next model: the task counts calls), in the task ledger, in one transaction. An `excused`
   * failure (this server's own misjudgement caused it) is recorded for the task but not counted.
   */
  async settle(
    a: LedgerAttempt,
    status: RunStatus,
    transition: Settled['transition'],
    willRetry: boolean,
    excused = false,
  ): Promise<Settled> {
    const verdict = OUTCOME_POLICY[status].breaker;
    const forTask = a.request.taskId !== undefined && !willRetry;
    /** Reads `state` only; the caller applies `nextBreaker` and the task entry. */
    const decide = (state: StateData, now: number) => {
      const entry = a.request.taskId === undefined ? undefined : state.tasks[a.request.taskId];
      const step = recordVerdict(state.breakers[a.modelKey] ?? CLOSED, verdict, now, a.runId, a.breaker);
      const openedCircuit = step.transition === 'opened' || step.transition === 'reopened';
      const call = judgeCall(entry, a, status, ownEscalation(status, openedCircuit), excused);
      const settled: Settled = {
        retryCount: call.retryCount,
        escalation: call.escalation,
        standing: call.standing.status,
        circuit: viewCircuit(step.next, now, a.breaker),
        transition: step.transition ?? transition,
        excused,
      };
      return { settled, call, nextBreaker: step.next };
    };
    try {
      if (!forTask) {
        // Without a task only the circuit may change: skip the lock when it would not.
        const snapshot = await this.#store.snapshot(taskScope(a.request));
        const breaker = snapshot.breakers[a.modelKey] ?? CLOSED;
        const changesNothing =
          breaker.state === 'closed' && (verdict === 'neutral' || (verdict === 'success' && breaker.consecutiveFailures === 0));
        if (changesNothing) return decide(snapshot, this.#clock()).settled;
      }
      const { settled, prunedAt } = await this.#store.transact(taskScope(a.request), (state) => {
        const now = this.#clock();
        const { settled, call, nextBreaker } = decide(state, now);
        state.breakers[a.modelKey] = nextBreaker;
        if (forTask) recordCall(state, a, call, now);
        return { settled, prunedAt: state.prunedAt };
      });
      // The attempt is recorded: a failed prune must not be mistaken for a lost update.
      await this.#pruneIfDue(prunedAt).catch((error: Error) => this.#warn(`pruning the task ledger failed: ${error.message}`));
      return settled;
    } catch (error) {
      return this.#settleUnsaved(a, status, (error as Error).message, ownEscalation(status, false), excused);
    } finally {
      // This may have been the probe others wait for: let them read its verdict now.
      this.probes.wake(a.modelKey);
    }
  }

  /**
   * An attempt its model's circuit refused ends: recorded for its task unless its call goes on.
   * `own`: the refusal's own escalation: `circuit_open` when the circuit refused it (the model failed
   * too often), null when the attempt's start allowance ran out while a probe was still in flight
   * (the model has not failed again yet).
   */
  async settleRefusal(a: LedgerAttempt, willRetry: boolean, own: 'circuit_open' | null): Promise<Settled> {
    try {
      return await this.#store.transact(taskScope(a.request), (state): Settled => {
        const now = this.#clock();
        const circuit = viewCircuit(state.breakers[a.modelKey] ?? CLOSED, now, a.breaker);
        const entry = a.request.taskId === undefined ? undefined : state.tasks[a.request.taskId];
        const call = judgeCall(entry, a, 'circuit_open', own);
        if (!willRetry) recordCall(state, a, call, now);
        const { retryCount, escalation, standing } = call;
        return { retryCount, escalation, standing: standing.status, circuit, transition: null };
      });
    } catch (error) {
      return this.#settleUnsaved(a, 'circuit_open', (error as Error).message, own, false);
    } finally {
      this.probes.wake(a.modelKey);
    }
  }

  /**
   * An attempt whose server died before it ended (see app/attempt/interrupted.ts): recorded for its
   * task as `interrupted`, unless the task already holds its verdict (the server died after recording
   * it, before logging it): then that verdict is what is said. The circuit is left alone.
   */
  async settleInterrupted(a: InterruptedAttempt): Promise<{ settled: Settled; status: RunStatus }> {
    const settings = { threshold: this.#config.breakerThreshold, cooldownMs: this.#config.breakerCooldownMs };
    const request: RunRequest = { model: a.model, prompt: '', taskId: a.taskId ?? undefined };
    const fromCaller = { settled: this.unsettled(a.callerRetryCount ?? 0, NO_ESCALATION), status: 'interrupted' as const };
    if (a.taskId === null) return fromCaller;
    try {
      return await this.#store.transact(taskScope(request), (state) => {
        const now = this.#clock();
        const entry = state.tasks[a.taskId!];
        const circuit = viewCircuit(state.breakers[a.modelKey] ?? CLOSED, now, settings);
        // Already recorded (by its id: other attempts of the task may have been recorded since).
        const recorded = recordedRun(entry, a.runId);
        if (recorded !== undefined) {
          const escalation = { escalate: entry!.escalated, reason: entry!.escalationReason };
          return { settled: { retryCount: recorded.retryCount, escalation, circuit, transition: null }, status: recorded.status };
        }
        const attempt = { runId: a.runId, request, maxRetries: a.maxRetries, before: [] };
        const call = judgeCall(entry, attempt, 'interrupted', null);
        recordCall(state, attempt, call, now);
        const settled = { retryCount: call.retryCount, escalation: call.escalation, circuit, transition: null };
        return { settled, status: 'interrupted' as RunStatus };
      });
    } catch (error) {
      this.#warn(`ledger not updated for interrupted run ${a.runId}: ${(error as Error).message}`);
      return fromCaller;
    }
  }

  /** What is said of an attempt that touched neither the ledger nor a circuit. */
  unsettled(retryCount: number, escalation: EscalationDecision): Settled {
    const settings: BreakerSettings = { threshold: this.#config.breakerThreshold, cooldownMs: this.#config.breakerCooldownMs };
    return { retryCount, escalation, circuit: viewCircuit(CLOSED, this.#clock(), settings), transition: null };
  }

  #leaseMs(a: LedgerAttempt): number {
    return a.startTimeoutMs + a.timeoutMs + this.#config.killGraceMs + PROBE_LEASE_MARGIN_MS;
  }

  /**
   * The circuit could not be updated at admission: judge it from the last saved state (an open
   * circuit still refuses), and say so. If the state cannot even be read, the run goes ahead.
   */
  async #admitUnsaved(a: LedgerAttempt, message: string): Promise<Admission> {
    const { request, modelKey, runId } = a;
    this.#warn(`circuit of ${modelKey} not updated at admission of run ${runId}: ${message}`);
    let snapshot: StateData;
    try {
      snapshot = await this.#store.snapshot(taskScope(request));
    } catch {
      a.note(circuitNotUpdated(modelKey, message, true));
      return { admitted: true, transition: null };
    }
    const now = this.#clock();
    const entry = request.taskId === undefined ? undefined : snapshot.tasks[request.taskId];
    if (this.#config.escalationMode === 'block' && entry?.escalated) {
      a.note(circuitNotUpdated(modelKey, message, false));
      return blockedBy(a, entry, snapshot, now);
    }
    const decision = admit(snapshot.breakers[modelKey] ?? CLOSED, now, runId, this.#leaseMs(a));
    // Another call's probe is in flight: wait for its verdict (or its lease to run out) as usual.
    if (!decision.admitted && decision.reason === 'probe_in_flight') return { admitted: false, probeInFlight: true };
    a.note(circuitNotUpdated(modelKey, message, decision.admitted));
    if (decision.admitted) return { admitted: true, transition: null };
    return circuitOpen(viewCircuit(decision.next, now, a.breaker));
  }

  /** The ledger could not be updated: count from what can still be read, and say so in the result. */
  async #settleUnsaved(
    a: LedgerAttempt,
    status: RunStatus,
    error: string,
    own: EscalationReason | null,
    excused: boolean,
  ): Promise<Settled> {
    this.#warn(`ledger not updated for run ${a.runId}: ${error}`);
    let snapshot: StateData | null = null;
    try {
      snapshot = await this.#store.snapshot(taskScope(a.request));
    } catch (readError) {
      this.#warn(`ledger not readable either: ${(readError as Error).message}`);
    }
    const entry = snapshot && a.request.taskId !== undefined ? snapshot.tasks[a.request.taskId] : undefined;
    const call = judgeCall(entry, a, status, own, excused);
    const verdict = unsavedVerdict({
      ledger: snapshot ? { entry } : 'unreadable',
      taskId: a.request.taskId,
      escalation: call.escalation,
      callerRetryCount: a.request.retryCount,
      error,
    });
    a.note(verdict.warning);
    if (!snapshot) return this.unsettled(verdict.retryCount, verdict.escalation);
    const circuit = viewCircuit(snapshot.breakers[a.modelKey] ?? CLOSED, this.#clock(), a.breaker);
    return { retryCount: verdict.retryCount, escalation: verdict.escalation, circuit, transition: null };
  }

  /**
   * Drop task entries untouched for OLLAMA_MCP_TASK_TTL_DAYS (escalated ones: 4 times that), and
   * the oldest beyond OLLAMA_MCP_MAX_TASKS, at most once an hour (it reads every ledger shard).
   * Ages are judged by a clock that moves at most a day per prune (`pruneClock`), so a forward step
   * of the wall clock cannot empty the ledger at once; a prune dated in the future (the clock
   * stepped back) is due at once rather than after the size of the step.
   */
  async #pruneIfDue(lastPrunedAt: number): Promise<void> {
    if (!pruneDue(lastPrunedAt, this.#clock())) return;
    await this.#store.transact('all', (state) => {
      const now = this.#clock();
      if (!pruneDue(state.prunedAt, now)) return; // another process just did it
      const asOf = pruneClock(state.prunedAsOf || state.prunedAt, now);
      state.tasks = pruneTasks(state.tasks, asOf, { maxAgeMs: this.#config.taskTtlMs, maxEntries: this.#config.maxTasks });
      state.prunedAt = now;
      state.prunedAsOf = asOf;
    });
  }
}

const NO_ESCALATION: EscalationDecision = { escalate: false, reason: null };

/** The refusal of an attempt whose task escalated before (`entry`), in block mode. */
function blockedBy(a: LedgerAttempt, entry: TaskLedgerEntry, state: StateData, now: number): Blocked {
  const reason = entry.escalationReason ?? 'max_retries_exceeded';
  const retryCount = retryCountFor(entry, a.request.retryCount);
  const circuit = viewCircuit(state.breakers[a.modelKey] ?? CLOSED, now, a.breaker);
  const settled: Settled = { retryCount, circuit, escalation: { escalate: true, reason }, transition: null };
  return { admitted: false, status: 'blocked', error: blockedError(a.request.taskId, reason), settled };
}

function circuitOpen(circuit: Settled['circuit']): Admission {
  return { admitted: false, status: 'circuit_open', error: circuitOpenError(circuit) };
}

/** The task's verdict of the call an attempt ends, and the retry_count it was judged at. */
interface JudgedCall {
  readonly retryCount: number;
  readonly status: RunStatus;
  /** The attempt of the call whose verdict stands for the task: this one, or an earlier model's. */
  readonly standing: { readonly status: RunStatus; readonly runId: string; readonly model: string };
  readonly counted: boolean;
  readonly escalation: EscalationDecision;
}

type CallAttempt = Pick<LedgerAttempt, 'runId' | 'request' | 'maxRetries' | 'before'>;

/** Judge the call that `a` ends with `status` (and `own`, its own escalation) from the task's entry as it stands. */
function judgeCall(
  entry: TaskLedgerEntry | undefined,
  a: CallAttempt,
  status: RunStatus,
  own: EscalationReason | null,
  excused = false,
): JudgedCall {
  const retryCount = retryCountFor(entry, a.request.retryCount);
  const verdicts = [...a.before, { status, own, excused, runId: a.runId, model: a.request.model }];
  const { standing, counted, escalation } = taskVerdict({
    verdicts,
    retryCount,
    maxRetries: a.maxRetries,
    escalatedBefore: entry?.escalationReason ?? null,
  });
  const { runId, model } = verdicts[standing]!;
  return { retryCount, status, standing: { status: verdicts[standing]!.status, runId, model }, counted, escalation };
}

/** Record a judged call for its task (the attempt that ended it names it). */
function recordCall(state: StateData, a: CallAttempt, call: JudgedCall, now: number): void {
  const { status, counted, retryCount, escalation, standing } = call;
  recordTask(state, a, { status, counted, retryCount, escalationReason: escalation.reason, standing }, now);
}

/** Add one attempt to the task's ledger. */
function recordTask(
  state: StateData,
  a: Pick<LedgerAttempt, 'runId' | 'request'>,
  facts: Pick<AttemptFacts, 'status' | 'counted' | 'retryCount' | 'escalationReason' | 'standing'>,
  now: number,
): void {
  const { request, runId } = a;
  if (request.taskId === undefined) return;
  state.tasks[request.taskId] = recordAttempt(state.tasks[request.taskId], { ...facts, runId, model: request.model, now });
}

/** The task ids a store transaction for this request touches. */
function taskScope(request: RunRequest): string[] {
  return request.taskId === undefined ? [] : [request.taskId];
}
