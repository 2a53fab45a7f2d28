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
  // The answer never began: the wait was in Ollama's queue (other clients), the disk, the machine or a
  // huge prompt, not in the model's own work, so the circuit is left alone. A load that Ollama itself
  // sees fail or stall is reported by Ollama (`llama-server process has terminated`, its own load
  // timeout) and counts as `crashed`. It counts for the task, so a task that never starts still ends in
  // max_retries_exceeded.
  start_timeout: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  empty_output: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  output_limit: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  // Includes the model failing to load or dying (`llama-server process has terminated`, `model runner has
  // unexpectedly stopped`, out of memory): that is the model's health on this machine, so it counts.
  crashed: policy({ ok: false, breaker: 'failure', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  server_busy: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  // The registry could not be reached while pulling: the network's fault, not the model's, and it
  // passes. Retry later; it still spends the task's budget, so an offline machine ends in max_retries_exceeded.
  pull_failed: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  // 429 usage limit: the account's quota, not the model's health. It lifts by itself (hourly/weekly),
  // so retry later; like server_busy it counts toward max_retries instead of escalating at once.
  rate_limited: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: true, escalateAtOnce: null }),
  // 403 (no subscription / cloud disabled): only a human can change the account or the server's
  // setting, so escalate on the first attempt; the model itself is healthy.
  cloud_access_denied: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'cloud_access_denied',
  }),
  // The caller's input does not fit this model: the same call fails the same way (not retryable as is),
  // the model is fine. It counts as a failed attempt so a caller that resends it anyway still reaches
  // max_retries_exceeded; a shortened prompt that succeeds clears the streak.
  prompt_too_long: policy({ ok: false, breaker: 'neutral', countsAsTaskFailure: true, retryable: false, escalateAtOnce: null }),
  // Embedding / image-generation / non-generating models: the choice of model is wrong, no retry fixes
  // it and no human is needed (pick a text model). Counted for the same reason as prompt_too_long.
  model_unsupported: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: null,
  }),
  // A file the prompt names (read by a multimodal model) is not an image, unreadable or too big:
  // the prompt must change; the model is fine. Counted like prompt_too_long.
  input_file_error: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: null,
  }),
  model_not_found: policy({
    ok: false,
    breaker: 'neutral',
    countsAsTaskFailure: true,
    retryable: false,
    escalateAtOnce: 'model_not_found',
  }),
  // Also a remote OLLAMA_HOST that cannot be reached (`Head ...: dial tcp ...`): the server's fault, never the model's.
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
