import type { RunStatus } from '../policy/run-status.js';
import type { CircuitTransition } from '../policy/breaker-state.js';
import { probeFailedError, probeWaitTimedOutError, stoppedWaitingError } from './attempt-errors.js';
import type { Admission, AttemptLedger, LedgerAttempt } from './attempt-ledger.js';
import type { CallSlots } from './call-slots.js';
import { STOP, type CallStep, type Next } from './call-runner.js';
import type { DispatchRequest, Grant } from './dispatcher.js';
import type { ProbeWaiters } from './probe-waiters.js';
import type { Settled } from './run-report.js';
import type { RunContext } from './run-request.js';
import { deadlineSignal } from './deadline-signal.js';

/** An attempt waiting for its turn: what the ledger needs, what the dispatcher needs, its place in its call. */
export interface ScheduledAttempt extends LedgerAttempt {
  readonly dispatch: DispatchRequest;
  readonly step?: CallStep;
}

/** A granted turn to spawn in, or why the attempt ends without running (and what its call does then). */
export type Turn =
  | { readonly go: true; readonly grant: Grant; readonly transition: CircuitTransition; readonly queueMs: number }
  | {
      readonly go: false;
      readonly status: RunStatus;
      readonly error: string;
      readonly settled: Settled;
      readonly next: Next;
      readonly queueMs?: number;
    };

export interface TurnSchedulerDeps {
  readonly ledger: AttemptLedger;
  readonly slots: CallSlots;
  readonly probes: ProbeWaiters;
  readonly clock: () => number;
  /** Record a verdict (and wake the model's probe waiters). */
  readonly settle: (
    attempt: ScheduledAttempt,
    status: RunStatus,
    transition: CircuitTransition,
    willRetry: boolean,
  ) => Promise<Settled>;
}

type Refusal = Exclude<Admission, { admitted: true }>;

/**
 * Circuit admission, a place in the dispatcher's queue, and the circuit checked again once the
 * turn is granted, until the attempt may spawn or must end. An attempt that meets another call's
 * half-open probe waits for the probe's verdict, holding no slot, then goes through admission
 * again: it runs if the probe closed the circuit and is refused if it reopened it. No attempt is
 * refused merely because a probe is in flight.
 */
export class TurnScheduler {
  readonly #deps: TurnSchedulerDeps;
  #admissions: Promise<void> = Promise.resolve();

  constructor(deps: TurnSchedulerDeps) {
    this.#deps = deps;
  }

  async takeTurn(attempt: ScheduledAttempt, context: RunContext): Promise<Turn> {
    const wait = new TurnWait(this.#deps, attempt, context);
    try {
      return await this.#take(wait, attempt);
    } finally {
      wait.dispose();
    }
  }

  async #take(wait: TurnWait, attempt: ScheduledAttempt): Promise<Turn> {
    for (;;) {
      // What the call does if the circuit refuses: the ledger records the refusal for the task only if
      // the call ends with it, so the same answer goes back to the call.
      let refusedNext = await nextAfter(attempt, 'circuit_open');
      const admission = await this.#admitInOrder(attempt, refusedNext, wait.signal);
      let refusal: Refusal;
      if (admission.admitted) {
        const granted = await wait.inQueue(admission);
        if (granted.kind === 'stopped') return wait.stopped('its turn to run');
        refusedNext = await nextAfter(attempt, 'circuit_open');
        const recheck = await this.#deps.ledger.admit(attempt, refusedNext.kind !== 'stop');
        if (recheck.admitted) return wait.go(granted.grant, recheck.transition);
        granted.grant.release(); // not spawning now: the turn goes to the next in line, perhaps another model's call
        refusal = recheck;
      } else refusal = admission;
      // A blocked task ends its call (blocked never falls through); a circuit refusal does what was decided.
      if (!refusal.probeInFlight) return wait.refused(refusal, refusal.status === 'circuit_open' ? refusedNext : STOP);
      const outcome = await wait.forProbe();
      if (outcome === 'aborted') return wait.stopped("the model's probe run");
      if (outcome === 'timed_out') return wait.probeWaitTimedOut();
    }
  }

  /** Admissions are taken one at a time so attempts reach the queue in the order they arrived, whatever their I/O timing. */
  async #admitInOrder(attempt: ScheduledAttempt, refusedNext: Next, signal: AbortSignal | undefined) {
    const { ledger, slots } = this.#deps;
    const turn = this.#admissions.then(async () => {
      const admission = await ledger.admit(attempt, refusedNext.kind !== 'stop');
      if (!admission.admitted) return admission;
      return { ...admission, slots: slots.request(attempt.dispatch, signal) };
    });
    this.#admissions = turn.then(noop, noop);
    return turn;
  }
}

/** One attempt's wait for its turn: in the queue, for a probe; how long it waited; how it ends. */
class TurnWait {
  /** Cancel, shutdown and (for a batch job) the batch deadline end every kind of waiting. */
  readonly signal: AbortSignal | undefined;
  /** Stops the deadline's timer once the wait is over. */
  readonly dispose: () => void;
  readonly #deps: TurnSchedulerDeps;
  readonly #attempt: ScheduledAttempt;
  readonly #context: RunContext;
  readonly #startedAt = performance.now();
  #waited = false;
  #transition: CircuitTransition = null;
  #probeWaitUntil: number | null = null;

  constructor(deps: TurnSchedulerDeps, attempt: ScheduledAttempt, context: RunContext) {
    this.#deps = deps;
    this.#attempt = attempt;
    this.#context = context;
    // Waiting ends on cancel, and at the call's (or its batch's) deadline; a running attempt ends by its own cut timeout.
    const { signal, dispose } = deadlineSignal(context.signal, context.deadlineAt, deps.clock());
    this.signal = signal;
    this.dispose = dispose;
  }

  async inQueue(admission: {
    transition: CircuitTransition;
    slots: ReturnType<CallSlots['request']>;
  }): Promise<{ kind: 'granted'; grant: Grant } | { kind: 'stopped' }> {
    this.#waited = true;
    this.#transition = admission.transition ?? this.#transition;
    this.#context.onPhase?.({ phase: 'queued', reason: admission.slots.reason });
    try {
      return { kind: 'granted', grant: await admission.slots.granted };
    } catch {
      return { kind: 'stopped' };
    }
  }

  go(grant: Grant, transition: CircuitTransition): Turn {
    return { go: true, grant, transition: transition ?? this.#transition, queueMs: this.#waitedMs() };
  }

  /** Waiting for the model's probe: bounded by the attempt's start allowance, as any wait before its answer. */
  forProbe(): Promise<'settled' | 'aborted' | 'timed_out'> {
    this.#waited = true;
    this.#probeWaitUntil ??= this.#deps.clock() + this.#attempt.startTimeoutMs;
    this.#context.onPhase?.({ phase: 'waiting_for_probe' });
    return this.#deps.probes.wait(this.#attempt.modelKey, this.#attempt.runId, this.signal, this.#probeWaitUntil);
  }

  async probeWaitTimedOut(): Promise<Turn> {
    const next = await nextAfter(this.#attempt, 'circuit_open');
    const settled = await this.#deps.ledger.settleProbeWaitTimeout(this.#attempt, next.kind !== 'stop');
    return this.#end('circuit_open', probeWaitTimedOutError(this.#attempt.startTimeoutMs, settled.circuit), settled, next);
  }

  refused(refusal: Exclude<Refusal, { probeInFlight: true }>, next: Next): Turn {
    const waitedForProbe = this.#probeWaitUntil !== null && refusal.status === 'circuit_open';
    const error = waitedForProbe ? probeFailedError(refusal.error) : refusal.error;
    return this.#end(refusal.status, error, refusal.settled, next);
  }

  /** Cancelled while it waited, or its deadline passed: its call ends (neither goes on to another attempt). */
  async stopped(waitingFor: string): Promise<Turn> {
    const context = this.#context;
    context.onPhase?.({ phase: 'finishing' });
    const late = context.deadlineAt !== undefined && this.#deps.clock() >= context.deadlineAt;
    const status = late ? 'not_started' : 'cancelled';
    const settled = await this.#deps.settle(this.#attempt, status, this.#transition, false);
    return this.#end(status, stoppedWaitingError(late, waitingFor, context.batchId !== undefined), settled, STOP);
  }

  #end(status: RunStatus, error: string, settled: Settled, next: Next): Turn {
    return { go: false, status, error, settled, next, ...(this.#waited ? { queueMs: this.#waitedMs() } : {}) };
  }

  #waitedMs(): number {
    return Math.round(performance.now() - this.#startedAt);
  }
}

/** What the attempt's call does if the attempt ends with `status`; a call's only attempt just ends. */
export function nextAfter(attempt: { readonly step?: CallStep }, status: RunStatus): Promise<Next> {
  return attempt.step ? attempt.step.after(status) : Promise.resolve(STOP);
}

function noop(): void {}
