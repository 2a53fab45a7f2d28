import type { EscalationReason, RunStatus } from './run-status.js';

/** How the server treats one kind of outcome. The README's failure table mirrors this. */
export interface OutcomePolicy {
  /** Did the run succeed? */
  readonly ok: boolean;
  /**
   * What the outcome says about the model's health, for its circuit:
   * `success` resets it, `failure` counts toward opening it, `neutral` leaves it alone
   * (the fault lies elsewhere: the server, the caller, the machine).
   */
  readonly breaker: 'success' | 'failure' | 'neutral';
  /** Does it count as a failed attempt of the task (toward `max_retries`)? */
  readonly countsAsTaskFailure: boolean;
  /** May the same call succeed if simply repeated (perhaps after a pause)? */
  readonly retryable: boolean;
  /** Escalate at once, whatever the retry count: no retry can fix it without a human. */
  readonly escalateAtOnce: EscalationReason | null;
}

const policy = (p: OutcomePolicy): OutcomePolicy => p;

/** The failure table. Keep it in step with the README. */
export const OUTCOME_POLICY: Readonly<Record<RunStatus, OutcomePolicy>> = {
  ok: policy({ ok: true, breaker: 'success', countsAsTaskFailure: false, retryable: false, escalateAtOnce: null }),
  timeout: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  empty_output: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  output_limit: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  crashed: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  server_busy: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  model_not_found: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'model_not_found',
  }),
  ollama_unreachable: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'ollama_unreachable',
  }),
  signin_required: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'signin_required',
  }),
  cli_not_found: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'cli_not_found',
  }),
  circuit_open: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: false,
    retryable: true,
    escalateAtOnce: 'circuit_open',
  }),
  unsupported_option: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: false,
    retryable: false,
    escalateAtOnce: null,
  }),
  cancelled: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: false, retryable: true, escalateAtOnce: null }),
  // A blocked attempt repeats the task's earlier escalation (the run service supplies its reason).
  blocked: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: false, retryable: false, escalateAtOnce: null }),
  not_started: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: false, retryable: true, escalateAtOnce: null }),
  invalid_input: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: false, retryable: false, escalateAtOnce: null }),
};
