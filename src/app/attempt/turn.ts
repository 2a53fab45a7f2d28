import type { CircuitTransition } from '../../policy/breaker-state.js';
import { abortedByDeadline, deadlineSignal } from '../queue/deadline-signal.js';
import type { DispatchRequest, Grant } from '../queue/dispatcher.js';
import type { TurnSlots } from '../queue/turn-slots.js';
import { probeFailedError, probeWaitTimedOutError, stoppedWaitingError } from './errors.js';
import type { AttemptLedger, Blocked, LedgerAttempt } from './ledger.js';
import type { QueueReason } from '../queue/queue-reason.js';

/** An attempt waiting for its turn: what the ledger needs, and what the dispatcher needs. */
export interface WaitingAttempt extends LedgerAttempt {
  readonly dispatch: DispatchRequest;
}

/** What the wait for a turn needs of the attempt's call. */
interface TurnContext {
  /** Cancel and shutdown. */
  readonly signal: AbortSignal | undefined;
  /** Epoch ms by which the call ends (its deadline_ms, or its batch's); undefined: none. */
  readonly deadlineAt: number | undefined;
  readonly inBatch: boolean;
  /** Tells the call's listeners where the wait stands. */
  readonly emit: (event: { type: 'queued'; reason: () => QueueReason | null } | { type: 'waiting_for_probe' }) => void;
}

/**
 * A granted turn to spawn in, or why the attempt ends without running. Nothing is recorded for the
 * task here but a block (which always ends its call): the attempt records the rest when it ends,
 * once its call decided whether it goes on.
 */
export type Turn =
  | { readonly kind: 'go'; readonly grant: Grant; readonly transition: CircuitTransition; readonly queueMs: number }
  /** The model's circuit refused it; `own`: null when only the attempt's start allowance ran out while a probe ran. */
  | { readonly kind: 'refused'; readonly error: string; readonly own: 'circuit_open' | null; readonly queueMs?: number }
  | { readonly kind: 'blocked'; readonly blocked: Blocked; readonly queueMs?: number }
  /** Cancelled while it waited, or the call's deadline passed first. */
  | {
      readonly kind: 'stopped';
      readonly status: 'cancelled' | 'not_started';
      readonly error: string;
      readonly transition: CircuitTransition;
      readonly queueMs?: number;
    };

interface TurnSchedulerDeps {
  readonly ledger: AttemptLedger;
  readonly slots: TurnSlots;
  readonly clock: () => number;
}

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

  async takeTurn(attempt: WaitingAttempt, context: TurnContext): Promise<Turn> {
    const wait = new TurnWait(this.#deps, attempt, context);
    try {
      return await this.#take(wait, attempt);
    } finally {
      wait.dispose();
    }
  }

  async #take(wait: TurnWait, attempt: WaitingAttempt): Promise<Turn> {
    for (;;) {
      const admission = await this.#admitInOrder(attempt, wait.signal);
      if (admission.admitted) {
        const granted = await wait.inQueue(admission);
        if (granted.kind === 'stopped') return wait.stopped('its turn to run');
        const recheck = await this.#deps.ledger.admit(attempt);
        if (recheck.admitted) return wait.go(granted.grant, recheck.transition);
        granted.grant.release(); // not spawning now: the turn goes to the next in line, perhaps another model's attempt
        if (!recheck.probeInFlight) return wait.refused(recheck);
      } else if (!admission.probeInFlight) return wait.refused(admission);
      const outcome = await wait.forProbe();
      if (outcome === 'aborted') return wait.stopped("the model's probe run");
      if (outcome === 'timed_out') return wait.probeWaitTimedOut();
    }
  }

  /** Admissions are taken one at a time so attempts reach the queue in the order they arrived, whatever their I/O timing. */
  async #admitInOrder(attempt: WaitingAttempt, signal: AbortSignal | undefined) {
    const { ledger, slots } = this.#deps;
    const turn = this.#admissions.then(async () => {
      const admission = await ledger.admit(attempt);
      if (!admission.admitted) return admission;
      return { ...admission, slots: slots.request(attempt.dispatch, signal) };
    });
    this.#admissions = turn.then(noop, noop);
    return turn;
  }
}

/** One attempt's wait for its turn: in the queue, for a probe; how long it waited; how it ends. */
class TurnWait {
  /** Cancel, shutdown and the call's deadline end every kind of waiting. */
  readonly signal: AbortSignal | undefined;
  /** Stops the deadline's timer once the wait is over. */
  readonly dispose: () => void;
  readonly #deps: TurnSchedulerDeps;
  readonly #attempt: WaitingAttempt;
  readonly #context: TurnContext;
  readonly #startedAt = performance.now();
  #waited = false;
  #transition: CircuitTransition = null;
  #probeWaitUntil: number | null = null;

  constructor(deps: TurnSchedulerDeps, attempt: WaitingAttempt, context: TurnContext) {
    this.#deps = deps;
    this.#attempt = attempt;
    this.#context = context;
    // A running attempt ends by its own cut timeout instead.
    const { signal, dispose } = deadlineSignal(context.signal, context.deadlineAt, deps.clock());
    this.signal = signal;
    this.dispose = dispose;
  }

  async inQueue(admission: {
    transition: CircuitTransition;
    slots: ReturnType<TurnSlots['request']>;
  }): Promise<{ kind: 'granted'; grant: Grant } | { kind: 'stopped' }> {
    this.#waited = true;
    this.#transition = admission.transition ?? this.#transition;
    this.#context.emit({ type: 'queued', reason: admission.slots.reason });
    try {
      return { kind: 'granted', grant: await admission.slots.granted };
    } catch {
      return { kind: 'stopped' };
    }
  }

  go(grant: Grant, transition: CircuitTransition): Turn {
    return { kind: 'go', grant, transition: transition ?? this.#transition, queueMs: this.#waitedMs() };
  }

  /** Waiting for the model's probe: bounded by the attempt's start allowance, as any wait before its answer. */
  forProbe(): Promise<'settled' | 'aborted' | 'timed_out'> {
    this.#waited = true;
    this.#probeWaitUntil ??= this.#deps.clock() + this.#attempt.startTimeoutMs;
    this.#context.emit({ type: 'waiting_for_probe' });
    const { modelKey, runId } = this.#attempt;
    return this.#deps.ledger.probes.wait(modelKey, runId, this.signal, this.#probeWaitUntil);
  }

  probeWaitTimedOut(): Turn {
    return { kind: 'refused', error: probeWaitTimedOutError(this.#attempt.startTimeoutMs), own: null, ...this.#queued() };
  }

  refused(refusal: { status: 'circuit_open'; error: string } | Blocked): Turn {
    if (refusal.status === 'blocked') return { kind: 'blocked', blocked: refusal, ...this.#queued() };
    const waitedForProbe = this.#probeWaitUntil !== null;
    const error = waitedForProbe ? probeFailedError(refusal.error) : refusal.error;
    return { kind: 'refused', error, own: 'circuit_open', ...this.#queued() };
  }

  /** Cancelled while it waited, or its deadline passed: its call ends (neither goes on to another attempt). */
  stopped(waitingFor: string): Turn {
    const { deadlineAt, inBatch } = this.#context;
    const late = abortedByDeadline(this.signal) || (deadlineAt !== undefined && this.#deps.clock() >= deadlineAt);
    const error = stoppedWaitingError(late, waitingFor, inBatch);
    return {
      kind: 'stopped',
      status: late ? 'not_started' : 'cancelled',
      error,
      transition: this.#transition,
      ...this.#queued(),
    };
  }

  #queued(): { queueMs?: number } {
    return this.#waited ? { queueMs: this.#waitedMs() } : {};
  }

  #waitedMs(): number {
    return Math.round(performance.now() - this.#startedAt);
  }
}

function noop(): void {}
