/**
 * Persisted, JSON-serialisable state of one model's circuit. Times are epoch milliseconds of the wall
 * clock, since every server process (and in team mode every machine) reads them; `rebase` in
 * breaker.ts keeps a clock that stepped back from stretching them.
 */
export type BreakerState =
  | {
      readonly state: 'closed';
      /** Model failures in a row since the last success. */
      readonly consecutiveFailures: number;
    }
  | {
      readonly state: 'open';
      readonly consecutiveFailures: number;
      readonly openedAt: number;
      /** When the cooldown ends and one probe may go through. */
      readonly retryAt: number;
    }
  | {
      readonly state: 'half_open';
      readonly consecutiveFailures: number;
      /** The one run allowed through, and until when its lease holds. `null`: nobody probing yet. */
      readonly probe: ProbeLease | null;
    };

/** The half-open probe's hold on the circuit. */
export interface ProbeLease {
  readonly runId: string;
  /** When the lease was taken (absent in files written before it was recorded). */
  readonly leasedAt?: number;
  readonly leaseUntil: number;
}

export type CircuitName = BreakerState['state'];

/** What happened to a model's circuit because of one attempt, if anything. */
export type CircuitTransition = 'opened' | 'reopened' | 'half_opened' | 'closed' | null;

export const CLOSED: BreakerState = { state: 'closed', consecutiveFailures: 0 };
