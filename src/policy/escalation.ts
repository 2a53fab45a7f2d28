import { OUTCOME_POLICY } from './outcome-policy.js';
import type { EscalationReason, RunStatus } from './run-status.js';

interface EscalationInput {
  readonly status: RunStatus;
  /** Failed attempts of the task recorded before this one (or the caller's figure, if larger). */
  readonly retryCount: number;
  /** 0 means no limit. */
  readonly maxRetries: number;
  /** Did this attempt's own failure open (or reopen) the model's circuit? */
  readonly openedCircuit: boolean;
}

export interface EscalationDecision {
  readonly escalate: boolean;
  readonly reason: EscalationReason | null;
}

export const NO_ESCALATION: EscalationDecision = { escalate: false, reason: null };

/**
 * Should the caller stop retrying and hand the task upwards?
 *
 * - Outcomes no retry can fix without a human (model missing, Ollama down, sign-in needed, cloud access
 *   denied, circuit open) escalate at once.
 * - Any other failure escalates once the task had already failed `maxRetries` times
 *   (so with `maxRetries: 3` the 4th failed attempt escalates). `maxRetries: 0` never escalates for count.
 * - A failure that opened the model's circuit escalates with `circuit_open`: the next calls would be refused.
 * - Success, cancellation and invalid input never escalate.
 */
export function decideEscalation({ status, retryCount, maxRetries, openedCircuit }: EscalationInput): EscalationDecision {
  const policy = OUTCOME_POLICY[status];
  if (policy.ok) return NO_ESCALATION;
  if (policy.escalateAtOnce) return { escalate: true, reason: policy.escalateAtOnce };
  if (policy.countsAsTaskFailure && maxRetries > 0 && retryCount >= maxRetries) {
    return { escalate: true, reason: 'max_retries_exceeded' };
  }
  if (openedCircuit) return { escalate: true, reason: 'circuit_open' };
  return NO_ESCALATION;
}
