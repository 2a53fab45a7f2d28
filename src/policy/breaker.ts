import { CLOSED, type BreakerState, type CircuitName } from './breaker-state.js';
import type { CircuitTransition } from '../telemetry/run-record.js';

/**
 * The circuit breaker of one model as a pure state machine: every function takes the current
 * state and the time, and returns the next state. Nothing here reads a clock or a file, so the
 * same code serves every server process (the store applies it inside a cross-process lock).
 *
 *   closed --(threshold model failures in a row)--> open
 *   open --(cooldown over, next call)--> half_open, that call is the one probe (with a lease)
 *   half_open --probe ok--> closed     half_open --probe fails--> open (a fresh cooldown)
 *   half_open --probe's lease expired (its server died)--> the next call becomes the probe
 */
export interface BreakerSettings {
  /** Consecutive model failures that open the circuit (>= 1). */
  readonly threshold: number;
  /** How long the circuit stays open before one probe is let through. */
  readonly cooldownMs: number;
}

export type Admission =
  | {
      readonly admitted: true;
      /** True when this run is the half-open probe whose result decides the circuit. */
      readonly probe: boolean;
      readonly next: BreakerState;
      readonly transition: CircuitTransition;
    }
  | {
      readonly admitted: false;
      readonly next: BreakerState;
      /** Epoch ms after which a new call may be admitted. */
      readonly retryAt: number;
    };

/**
 * May a run of this model start now?
 * @param leaseMs how long a probe may hold the half-open slot before another call may take it
 *   over (its timeout plus the kill grace, so a crashed server cannot wedge the circuit).
 */
export function admit(state: BreakerState, now: number, runId: string, leaseMs: number, settings: BreakerSettings): Admission {
  switch (state.state) {
    case 'closed':
      return { admitted: true, probe: false, next: state, transition: null };
    case 'open':
      if (now < state.retryAt) return { admitted: false, next: state, retryAt: state.retryAt };
      return {
        admitted: true,
        probe: true,
        next: { state: 'half_open', consecutiveFailures: state.consecutiveFailures, probe: { runId, leaseUntil: now + leaseMs } },
        transition: 'half_opened',
      };
    case 'half_open':
      if (state.probe && state.probe.leaseUntil > now) {
        return { admitted: false, next: state, retryAt: Math.min(state.probe.leaseUntil, now + settings.cooldownMs) };
      }
      return {
        admitted: true,
        probe: true,
        next: { ...state, probe: { runId, leaseUntil: now + leaseMs } },
        transition: null,
      };
  }
}

export type BreakerVerdict = 'success' | 'failure' | 'neutral';

export interface BreakerStep {
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
  switch (state.state) {
    case 'closed': {
      if (verdict === 'neutral') return { next: state, transition: null };
      if (verdict === 'success') {
        return { next: state.consecutiveFailures === 0 ? state : CLOSED, transition: null };
      }
      const failures = state.consecutiveFailures + 1;
      if (failures >= settings.threshold) {
        return { next: openAt(now, failures, settings), transition: 'opened' };
      }
      return { next: { state: 'closed', consecutiveFailures: failures }, transition: null };
    }
    case 'open':
      return { next: state, transition: null };
    case 'half_open': {
      if (state.probe?.runId !== runId) return { next: state, transition: null };
      if (verdict === 'success') return { next: CLOSED, transition: 'closed' };
      if (verdict === 'failure') {
        return { next: openAt(now, state.consecutiveFailures + 1, settings), transition: 'reopened' };
      }
      // The probe told us nothing about the model (cancelled, Ollama down): free the slot for another probe.
      return { next: { ...state, probe: null }, transition: null };
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

export function viewCircuit(state: BreakerState, now: number, settings: BreakerSettings): CircuitView {
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
