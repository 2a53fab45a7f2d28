import { CLOSED, type BreakerState, type CircuitName, type CircuitTransition, type ProbeLease } from './breaker-state.js';

/**
 * The circuit breaker of one model as a pure state machine: every function takes the current
 * state and the time, and returns the next state. Nothing here reads a clock or a file, so the
 * same code serves every server process (the store applies it inside a cross-process lock).
 *
 *   closed --(threshold model failures in a row)--> open
 *   open --(cooldown over, next call)--> half_open, that call is the one probe (with a lease)
 *   half_open --probe ok--> closed     half_open --probe fails--> open (a fresh cooldown)
 *   half_open --probe's lease expired (its server died)--> the next call becomes the probe
 *   half_open, probe in flight: other calls wait for its verdict (they are not refused)
 *
 * The times are the wall clock's (the state is shared), so a step of that clock moves them: a
 * forward step at worst lets a probe through early; a backward step would stretch a cooldown or a
 * probe's lease by the size of the step, which `rebase` prevents.
 */
export interface BreakerSettings {
  /** Consecutive model failures that open the circuit (>= 1). */
  readonly threshold: number;
  /** How long the circuit stays open before one probe is let through. */
  readonly cooldownMs: number;
}

/**
 * What a call may do about a model's circuit at a given moment. Read-only: `admit` applies it.
 * - `run`: the circuit is closed, or this very call holds the live probe lease.
 * - `probe`: the cooldown is over (or the last probe's lease expired, or it said nothing about
 *   the model): this call may become the one probe.
 * - `wait_for_probe`: another call's probe is in flight; its verdict decides, so wait for it
 *   instead of refusing (a refusal would escalate a call that did nothing wrong).
 * - `refuse`: open, cooldown not over.
 * - `rebase`: the circuit's times lie ahead of the clock (it stepped back): `admit`, under the
 *   store's lock, stores them rebased before deciding.
 */
type CircuitGate =
  | { readonly kind: 'run' }
  | { readonly kind: 'probe' }
  | { readonly kind: 'wait_for_probe'; readonly leaseUntil: number }
  | { readonly kind: 'refuse'; readonly retryAt: number }
  | { readonly kind: 'rebase' };

export function circuitGate(state: BreakerState, now: number, runId: string): CircuitGate {
  return rebase(state, now) === state ? gateOf(state, now, runId) : { kind: 'rebase' };
}

/** The gate of a circuit whose times do not lie ahead of `now`. */
function gateOf(state: BreakerState, now: number, runId: string): Exclude<CircuitGate, { kind: 'rebase' }> {
  switch (state.state) {
    case 'closed':
      return { kind: 'run' };
    case 'open':
      return now < state.retryAt ? { kind: 'refuse', retryAt: state.retryAt } : { kind: 'probe' };
    case 'half_open':
      if (!state.probe || state.probe.leaseUntil <= now) return { kind: 'probe' };
      if (state.probe.runId === runId) return { kind: 'run' };
      return { kind: 'wait_for_probe', leaseUntil: state.probe.leaseUntil };
  }
}

/**
 * The circuit after the wall clock stepped back: a cooldown or a probe's lease that starts after
 * `now` is moved to start at `now`, keeping its length, so it never lasts longer than configured
 * from the moment a server sees it. The same object when no time lies ahead of `now`.
 */
export function rebase(state: BreakerState, now: number): BreakerState {
  if (state.state === 'open' && state.openedAt > now) {
    return { ...state, openedAt: now, retryAt: now + (state.retryAt - state.openedAt) };
  }
  if (state.state === 'half_open' && state.probe?.leasedAt !== undefined && state.probe.leasedAt > now) {
    const { runId, leasedAt, leaseUntil } = state.probe;
    return { ...state, probe: { runId, leasedAt: now, leaseUntil: now + (leaseUntil - leasedAt) } };
  }
  return state;
}

type Admission =
  | {
      readonly admitted: true;
      /** True when this run is the half-open probe whose result decides the circuit. */
      readonly probe: boolean;
      readonly next: BreakerState;
      readonly transition: CircuitTransition;
    }
  | {
      readonly admitted: false;
      /** `open`: refuse the call. `probe_in_flight`: another call is probing; wait for its verdict. */
      readonly reason: 'open' | 'probe_in_flight';
      readonly next: BreakerState;
      /** Epoch ms after which a new call may be admitted (for `probe_in_flight`: when the probe's lease ends). */
      readonly retryAt: number;
    };

/**
 * May a run of this model start now? Called at admission and again when the call leaves the
 * concurrency queue (the circuit may have opened while it waited).
 * @param leaseMs how long a probe may hold the half-open slot before another call may take it
 *   over (its timeout plus the kill grace, so a crashed server cannot wedge the circuit). A probe
 *   that is checked again (when it leaves the queue) gets a fresh lease from then.
 */
export function admit(state: BreakerState, now: number, runId: string, leaseMs: number): Admission {
  const current = rebase(state, now);
  const gate = gateOf(current, now, runId);
  switch (gate.kind) {
    case 'run':
      if (current.state !== 'half_open') return { admitted: true, probe: false, next: current, transition: null };
      return { admitted: true, probe: true, next: { ...current, probe: lease(runId, now, leaseMs) }, transition: null };
    case 'refuse':
      return { admitted: false, reason: 'open', next: current, retryAt: gate.retryAt };
    case 'wait_for_probe':
      return { admitted: false, reason: 'probe_in_flight', next: current, retryAt: gate.leaseUntil };
    case 'probe':
      return {
        admitted: true,
        probe: true,
        next: { state: 'half_open', consecutiveFailures: current.consecutiveFailures, probe: lease(runId, now, leaseMs) },
        transition: current.state === 'open' ? 'half_opened' : null,
      };
  }
}

function lease(runId: string, now: number, leaseMs: number): ProbeLease {
  return { runId, leasedAt: now, leaseUntil: now + leaseMs };
}

type BreakerVerdict = 'success' | 'failure' | 'neutral';

interface BreakerStep {
  readonly next: BreakerState;
  readonly transition: CircuitTransition;
}

/**
 * Apply a finished run's verdict. In half-open only the probe's own result counts; results of
 * runs that were admitted before the circuit opened (stragglers) leave an open or half-open
 * circuit alone, so one late success cannot close a circuit that others saw failing.
 */
export function recordVerdict(
  state: BreakerState,
  verdict: BreakerVerdict,
  now: number,
  runId: string,
  settings: BreakerSettings,
): BreakerStep {
  const current = rebase(state, now);
  switch (current.state) {
    case 'closed': {
      if (verdict === 'neutral') return { next: current, transition: null };
      if (verdict === 'success') {
        return { next: current.consecutiveFailures === 0 ? current : CLOSED, transition: null };
      }
      const failures = current.consecutiveFailures + 1;
      if (failures >= settings.threshold) {
        return { next: openAt(now, failures, settings), transition: 'opened' };
      }
      return { next: { state: 'closed', consecutiveFailures: failures }, transition: null };
    }
    case 'open':
      return { next: current, transition: null };
    case 'half_open': {
      if (current.probe?.runId !== runId) return { next: current, transition: null };
      if (verdict === 'success') return { next: CLOSED, transition: 'closed' };
      if (verdict === 'failure') {
        return { next: openAt(now, current.consecutiveFailures + 1, settings), transition: 'reopened' };
      }
      // The probe told us nothing about the model (cancelled, Ollama down): free the slot for another probe.
      return { next: { ...current, probe: null }, transition: null };
    }
  }
}

/** Close the circuit by hand (after a human fixed the model). */
export function resetBreaker(): BreakerState {
  return CLOSED;
}

function openAt(now: number, consecutiveFailures: number, settings: BreakerSettings): BreakerState {
  return { state: 'open', consecutiveFailures, openedAt: now, retryAt: now + settings.cooldownMs };
}

/** What a caller is told about a circuit. */
export interface CircuitView {
  readonly state: CircuitName;
  readonly consecutive_failures: number;
  /** Seconds until a call may be admitted; `null` when one may be admitted now. */
  readonly retry_after_seconds: number | null;
}

export function viewCircuit(stored: BreakerState, now: number, settings: BreakerSettings): CircuitView {
  const state = rebase(stored, now);
  const retryAt =
    state.state === 'open'
      ? state.retryAt
      : state.state === 'half_open' && state.probe && state.probe.leaseUntil > now
        ? Math.min(state.probe.leaseUntil, now + settings.cooldownMs)
        : null;
  return {
    state: state.state,
    consecutive_failures: state.consecutiveFailures,
    retry_after_seconds: retryAt !== null && retryAt > now ? Math.ceil((retryAt - now) / 1000) : null,
  };
}
