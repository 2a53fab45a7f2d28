import type { RunStatus } from '../policy/run-status.js';
import type { CircuitTransition } from '../policy/breaker-state.js';
import { probeFailedError, probeWaitTimedOutError, stoppedWaitingError } from './attempt-errors.js';
import type { Admission, AttemptLedger, LedgerAttempt } from './attempt-ledger.js';
import type { CallSlots } from './call-slots.js';
import type { DispatchRequest, Grant } from './dispatcher.js';
import type { ProbeWaiters } from './probe-waiters.js';
import type { Settled } from './run-report.js';
import type { RunContext } from './run-request.js';

/** A call waiting for its turn: what the ledger needs, and what the dispatcher needs. */
export interface ScheduledCall extends LedgerAttempt {
  readonly dispatch: DispatchRequest;
}

/** A granted turn to spawn in, or why the call ends without running. */
export type Turn =
  | { readonly go: true; readonly grant: Grant; readonly transition: CircuitTransition; readonly queueMs: number }
  | {
      readonly go: false;
      readonly status: RunStatus;
      readonly error: string;
      readonly settled: Settled;
      readonly queueMs?: number;
    };

export interface TurnSchedulerDeps {
  readonly ledger: AttemptLedger;
  readonly slots: CallSlots;
  readonly probes: ProbeWaiters;
  readonly clock: () => number;
  /** Record a verdict (and wake the model's probe waiters). */
  readonly settle: (call: ScheduledCall, status: RunStatus, transition: CircuitTransition) => Promise<Settled>;
}

/**
 * Circuit admission, a place in the dispatcher's queue, and the circuit checked again once the
 * turn is granted, until the call may spawn or must end. A call that meets another call's
 * half-open probe waits for the probe's verdict, holding no slot, then goes through admission
 * again: it runs if the probe closed the circuit and is refused if it reopened it. No call is
 * refused merely because a probe is in flight.
 */
export class TurnScheduler {
  readonly #deps: TurnSchedulerDeps;
  #admissions: Promise<void> = Promise.resolve();

  constructor(deps: TurnSchedulerDeps) {
    this.#deps = deps;
  }

  async takeTurn(call: ScheduledCall, context: RunContext): Promise<Turn> {
    const { ledger, slots, probes, clock } = this.#deps;
    // Cancel, shutdown and (for a batch job) the batch deadline end every kind of waiting.
    const waitSignal = queueSignal(context, clock());
    const startedAt = performance.now();
    const waitedMs = () => Math.round(performance.now() - startedAt);
    let transition: CircuitTransition = null;
    let waited = false;
    let probeWaitUntil: number | null = null;
    const end = (status: RunStatus, error: string, settled: Settled): Turn => ({
      go: false,
      status,
      error,
      settled,
      ...(waited ? { queueMs: waitedMs() } : {}),
    });
    const stopped = async (waitingFor: string): Promise<Turn> => {
      context.onPhase?.({ phase: 'finishing' });
      const late = context.deadlineAt !== undefined && clock() >= context.deadlineAt;
      const status = late ? 'not_started' : 'cancelled';
      return end(
        status,
        stoppedWaitingError(late, waitingFor, context.batchId !== undefined),
        await this.#deps.settle(call, status, transition),
      );
    };

    for (;;) {
      // Admissions are taken one at a time so calls reach the FIFO queues in the order they
      // arrived, whatever their I/O timing.
      const turn = this.#admissions.then(async () => {
        const admission = await ledger.admit(call);
        if (!admission.admitted) return admission;
        return { ...admission, slots: slots.request(call.dispatch, waitSignal) };
      });
      this.#admissions = turn.then(noop, noop);
      const admission = await turn;
      let verdict: Exclude<Admission, { admitted: true }>;
      if (!admission.admitted) verdict = admission;
      else {
        waited = true;
        transition = admission.transition ?? transition;
        context.onPhase?.({ phase: 'queued', reason: admission.slots.reason });
        let grant: Grant;
        try {
          grant = await admission.slots.granted;
        } catch {
          return stopped('its turn to run');
        }
        // The circuit may have opened while this call stood in line: check it again before spawning.
        const recheck = await ledger.admit(call);
        if (recheck.admitted) return { go: true, grant, transition: recheck.transition ?? transition, queueMs: waitedMs() };
        grant.release(); // not spawning now: the turn goes to the next in line, perhaps another model's call
        verdict = recheck;
      }
      if (verdict.probeInFlight) {
        waited = true;
        probeWaitUntil ??= clock() + call.timeoutMs;
        context.onPhase?.({ phase: 'waiting_for_probe' });
        const outcome = await probes.wait(call.modelKey, call.runId, waitSignal, probeWaitUntil);
        if (outcome === 'settled') continue;
        if (outcome === 'aborted') return stopped("the model's probe run");
        const settled = await ledger.settleProbeWaitTimeout(call);
        return end('circuit_open', probeWaitTimedOutError(call.timeoutMs, settled.circuit), settled);
      }
      const waitedForProbe = probeWaitUntil !== null && verdict.status === 'circuit_open';
      return end(verdict.status, waitedForProbe ? probeFailedError(verdict.error) : verdict.error, verdict.settled);
    }
  }
}

function noop(): void {}

/** Waiting for a slot ends on cancel, and also at a batch deadline (a running job ends by its cut timeout instead). */
function queueSignal(context: RunContext, now: number): AbortSignal | undefined {
  if (context.deadlineAt === undefined) return context.signal;
  const untilDeadline = AbortSignal.timeout(Math.max(0, context.deadlineAt - now));
  return context.signal ? AbortSignal.any([context.signal, untilDeadline]) : untilDeadline;
}
