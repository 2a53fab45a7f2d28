import { describe, expect, it } from 'vitest';
import { admit, circuitGate, recordVerdict, viewCircuit, type BreakerSettings } from '../../../src/policy/breaker.js';
import { CLOSED, type BreakerState } from '../../../src/policy/breaker-state.js';

const settings: BreakerSettings = { threshold: 3, cooldownMs: 60_000 };
const LEASE = 10_000;

/** Feed verdicts through the machine the way the server does, with a fake clock. */
function failTimes(state: BreakerState, times: number, now: number): BreakerState {
  let current = state;
  for (let i = 0; i < times; i += 1) current = recordVerdict(current, 'failure', now, `run-${i}`, settings).next;
  return current;
}

describe('circuit breaker state machine', () => {
  it('stays closed below the threshold and opens on the threshold-th consecutive failure', () => {
    const twice = failTimes(CLOSED, 2, 1_000);
    expect(twice).toEqual({ state: 'closed', consecutiveFailures: 2 });
    const step = recordVerdict(twice, 'failure', 1_000, 'run-x', settings);
    expect(step.transition).toBe('opened');
    expect(step.next).toEqual({ state: 'open', consecutiveFailures: 3, openedAt: 1_000, retryAt: 61_000 });
  });

  it('a success resets the count, so failures must be consecutive', () => {
    let state = failTimes(CLOSED, 2, 0);
    state = recordVerdict(state, 'success', 0, 'ok', settings).next;
    state = failTimes(state, 2, 0);
    expect(state).toEqual({ state: 'closed', consecutiveFailures: 2 });
  });

  it("neutral outcomes (not the model's fault) neither count nor reset", () => {
    let state = failTimes(CLOSED, 2, 0);
    state = recordVerdict(state, 'neutral', 0, 'n', settings).next;
    expect(state).toEqual({ state: 'closed', consecutiveFailures: 2 });
  });

  it('refuses calls while open and says when to come back', () => {
    const open = failTimes(CLOSED, 3, 1_000);
    const decision = admit(open, 31_000, 'r', LEASE);
    expect(decision.admitted).toBe(false);
    if (!decision.admitted) expect(decision.retryAt).toBe(61_000);
    expect(viewCircuit(open, 31_000, settings)).toEqual({ state: 'open', consecutive_failures: 3, retry_after_seconds: 30 });
    expect(viewCircuit(open, 60_500, settings).retry_after_seconds).toBe(1);
  });

  it('after the cooldown admits exactly one probe; a second caller is told to wait for its verdict, not refused', () => {
    const open = failTimes(CLOSED, 3, 0);
    const first = admit(open, 60_000, 'probe-1', LEASE);
    expect(first).toMatchObject({ admitted: true, probe: true, transition: 'half_opened' });
    expect(first.next).toEqual({
      state: 'half_open',
      consecutiveFailures: 3,
      probe: { runId: 'probe-1', leasedAt: 60_000, leaseUntil: 70_000 },
    });
    const second = admit(first.next, 61_000, 'probe-2', LEASE);
    expect(second).toEqual({ admitted: false, reason: 'probe_in_flight', next: first.next, retryAt: 70_000 });
  });

  it('an open circuit refuses with reason open; only a live probe makes callers wait', () => {
    const open = failTimes(CLOSED, 3, 0);
    expect(admit(open, 59_999, 'r', LEASE)).toMatchObject({ admitted: false, reason: 'open', retryAt: 60_000 });
  });

  it('the probe itself is admitted again when it leaves the queue, with a fresh lease', () => {
    const half = admit(failTimes(CLOSED, 3, 0), 60_000, 'p', LEASE).next;
    const again = admit(half, 68_000, 'p', LEASE);
    expect(again).toMatchObject({ admitted: true, probe: true, transition: null });
    expect(again.next).toEqual({
      state: 'half_open',
      consecutiveFailures: 3,
      probe: { runId: 'p', leasedAt: 68_000, leaseUntil: 78_000 },
    });
  });

  it('a probe whose lease expired (its server crashed) is replaced by the next caller', () => {
    const half: BreakerState = { state: 'half_open', consecutiveFailures: 3, probe: { runId: 'dead', leaseUntil: 70_000 } };
    const next = admit(half, 70_000, 'fresh', LEASE);
    expect(next).toMatchObject({ admitted: true, probe: true });
    expect(next.next).toMatchObject({ probe: { runId: 'fresh', leaseUntil: 80_000 } });
    // The dead probe's late result no longer decides anything.
    expect(recordVerdict(next.next, 'success', 71_000, 'dead', settings).next).toBe(next.next);
  });

  it("the probe's success closes the circuit", () => {
    const half = admit(failTimes(CLOSED, 3, 0), 60_000, 'p', LEASE).next;
    const step = recordVerdict(half, 'success', 61_000, 'p', settings);
    expect(step).toEqual({ next: CLOSED, transition: 'closed' });
  });

  it("the probe's failure reopens it with a fresh cooldown", () => {
    const half = admit(failTimes(CLOSED, 3, 0), 60_000, 'p', LEASE).next;
    const step = recordVerdict(half, 'failure', 65_000, 'p', settings);
    expect(step.transition).toBe('reopened');
    expect(step.next).toEqual({ state: 'open', consecutiveFailures: 4, openedAt: 65_000, retryAt: 125_000 });
  });

  it('a neutral probe result frees the slot for another probe without deciding', () => {
    const half = admit(failTimes(CLOSED, 3, 0), 60_000, 'p', LEASE).next;
    const step = recordVerdict(half, 'neutral', 61_000, 'p', settings);
    expect(step.next).toEqual({ state: 'half_open', consecutiveFailures: 3, probe: null });
    expect(admit(step.next, 61_001, 'q', LEASE)).toMatchObject({ admitted: true, probe: true });
  });

  it('late results of runs admitted before the circuit opened do not move an open circuit', () => {
    const open = failTimes(CLOSED, 3, 0);
    expect(recordVerdict(open, 'success', 1, 'straggler', settings).next).toBe(open);
    expect(recordVerdict(open, 'failure', 1, 'straggler', settings).next).toBe(open);
  });

  it('threshold 1 opens on the first failure', () => {
    const step = recordVerdict(CLOSED, 'failure', 0, 'r', { threshold: 1, cooldownMs: 1_000 });
    expect(step.transition).toBe('opened');
  });
});

describe('circuitGate: admit, wait for the probe, or refuse, by state and time', () => {
  const open: BreakerState = { state: 'open', consecutiveFailures: 3, openedAt: 0, retryAt: 60_000 };
  const probing: BreakerState = { state: 'half_open', consecutiveFailures: 3, probe: { runId: 'p', leaseUntil: 70_000 } };

  it('a closed circuit lets every call run', () => {
    expect(circuitGate(CLOSED, 0, 'a')).toEqual({ kind: 'run' });
    expect(circuitGate({ state: 'closed', consecutiveFailures: 2 }, 0, 'a')).toEqual({ kind: 'run' });
  });

  it('an open circuit refuses until the cooldown is over, then offers the probe', () => {
    expect(circuitGate(open, 59_999, 'a')).toEqual({ kind: 'refuse', retryAt: 60_000 });
    expect(circuitGate(open, 60_000, 'a')).toEqual({ kind: 'probe' });
  });

  it("other calls wait while the probe's lease holds; the probe itself runs", () => {
    expect(circuitGate(probing, 65_000, 'other')).toEqual({ kind: 'wait_for_probe', leaseUntil: 70_000 });
    expect(circuitGate(probing, 65_000, 'p')).toEqual({ kind: 'run' });
  });

  it("an expired lease (the probe's server died) or a freed probe slot offers the probe to the next call", () => {
    expect(circuitGate(probing, 70_000, 'other')).toEqual({ kind: 'probe' });
    expect(circuitGate({ state: 'half_open', consecutiveFailures: 3, probe: null }, 0, 'other')).toEqual({ kind: 'probe' });
  });
});

describe('circuits when the wall clock steps', () => {
  const DAY = 86_400_000;
  const T = 10 * DAY;
  const open: BreakerState = { state: 'open', consecutiveFailures: 3, openedAt: T, retryAt: T + 60_000 };

  it('a backward step never lengthens a cooldown: the circuit waits at most its cooldown from now, and stores that', () => {
    const now = T - DAY;
    expect(viewCircuit(open, now, settings).retry_after_seconds).toBe(60);
    const refused = admit(open, now, 'r', LEASE);
    expect(refused).toMatchObject({ admitted: false, reason: 'open', retryAt: now + 60_000 });
    expect(refused.next).toEqual({ state: 'open', consecutiveFailures: 3, openedAt: now, retryAt: now + 60_000 });
    expect(admit(refused.next, now + 60_000, 'p', LEASE)).toMatchObject({
      admitted: true,
      probe: true,
      transition: 'half_opened',
    });
  });

  it('a forward step at worst lets the probe through early', () => {
    expect(admit(open, T + DAY, 'p', LEASE)).toMatchObject({ admitted: true, probe: true });
  });

  it('a backward step never makes a probe lease outlast its length; the lease is rebased under the lock first', () => {
    const half = admit(open, T + 60_000, 'p', LEASE).next;
    const now = T - DAY;
    // Lock-free readers are sent to the locked path, where admit stores the rebased lease.
    expect(circuitGate(half, now, 'other').kind).not.toBe('wait_for_probe');
    const waiting = admit(half, now, 'other', LEASE);
    expect(waiting).toMatchObject({ admitted: false, reason: 'probe_in_flight', retryAt: now + LEASE });
    expect(circuitGate(waiting.next, now + 1, 'other')).toEqual({ kind: 'wait_for_probe', leaseUntil: now + LEASE });
    expect(circuitGate(waiting.next, now + LEASE, 'other')).toEqual({ kind: 'probe' });
    // The probe's own verdict still decides.
    expect(recordVerdict(waiting.next, 'success', now + 5, 'p', settings)).toEqual({ next: CLOSED, transition: 'closed' });
  });
});
