import type { EscalationReason, RunStatus } from './run-status.js';

/** How the server treats one kind of outcome. The failure table of docs/result-and-escalation.md mirrors this. */
interface OutcomePolicy {
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
  /**
   * Does a fallback chain move on to its next model (policy/fallback.ts)? `always`: this model cannot
   * serve and another may; `if_time_left`: a timeout moves on only within the call's `deadline_ms`;
   * `never`: another model of the same Ollama cannot help, or the call is over.
   */
  readonly fallthrough: 'always' | 'if_time_left' | 'never';
  /** A "not now" that the call itself retries on the same model after a short wait (policy/busy-backoff.ts). */
  readonly busy: boolean;
}

/** The model itself failed: it counts toward its circuit and the task's retries; a retry may work. */
const MODEL_FAILURE: OutcomePolicy = {
  ok: false,
  breaker: 'failure',
  countsAsTaskFailure: true,
  retryable: true,
  escalateAtOnce: null,
  fallthrough: 'always',
  busy: false,
};
/** Trouble outside the model that passes by itself: the circuit is left alone; it spends the task's retries. */
const PASSING: OutcomePolicy = { ...MODEL_FAILURE, breaker: 'neutral' };
/** "Not now" from Ollama or the machine: retried inside the call; another model of the same Ollama would not help. */
const NOT_NOW: OutcomePolicy = { ...PASSING, fallthrough: 'never', busy: true };
/**
 * The call as sent fails the same way again, the model is fine. It counts, so a caller that resends
 * it anyway still reaches max_retries_exceeded; a changed call that succeeds clears the streak.
 */
const CALL_MUST_CHANGE: OutcomePolicy = { ...PASSING, retryable: false };
/** No retry can fix it without a human: escalate on the first attempt. */
const needsHuman = (reason: EscalationReason): OutcomePolicy => ({ ...CALL_MUST_CHANGE, escalateAtOnce: reason });
/** Not a failed attempt of the task: nothing ran, or the caller stopped it. */
const NOT_COUNTED: OutcomePolicy = { ...PASSING, countsAsTaskFailure: false, fallthrough: 'never' };

/** The failure table, one row per status: docs/result-and-escalation.md and docs/fallback-chains.md mirror it. */
export const OUTCOME_POLICY: Readonly<Record<RunStatus, OutcomePolicy>> = {
  ok: {
    ok: true,
    breaker: 'success',
    countsAsTaskFailure: false,
    retryable: false,
    escalateAtOnce: null,
    fallthrough: 'never',
    busy: false,
  },
  // Without deadline_ms the caller's budget was this model's limits, and they are spent.
  timeout: { ...MODEL_FAILURE, fallthrough: 'if_time_left' },
  // The answer never began: the wait was in Ollama's queue (other clients), the disk, the machine or a
  // huge prompt, not in the model's own work. A load that Ollama itself sees fail or stall is reported
  // by Ollama (`llama-server process has terminated`, its own load timeout) and counts as `crashed`.
  start_timeout: { ...PASSING, fallthrough: 'if_time_left' },
  empty_output: MODEL_FAILURE,
  output_limit: MODEL_FAILURE,
  // Includes the model failing to load or dying (`llama-server process has terminated`, `model runner has
  // unexpectedly stopped`, out of memory): that is the model's health on this machine.
  crashed: MODEL_FAILURE,
  server_busy: NOT_NOW,
  // The registry could not be reached while pulling: the network's fault, not the model's.
  pull_failed: PASSING,
  // 429 usage limit: the account's quota, not the model's health; it lifts by itself (hourly/weekly).
  // Retried inside the call first (a burst limit may lift); then another model may serve.
  rate_limited: { ...NOT_NOW, fallthrough: 'always' },
  // 403 (no subscription / cloud disabled): only a human can change the account or the server's setting.
  cloud_access_denied: needsHuman('cloud_access_denied'),
  prompt_too_long: CALL_MUST_CHANGE,
  // Embedding / image-generation / non-generating models: pick a text model (no human needed).
  model_unsupported: CALL_MUST_CHANGE,
  // A file the prompt names (read by a multimodal model) is not an image, unreadable or too big.
  input_file_error: { ...CALL_MUST_CHANGE, fallthrough: 'never' },
  model_not_found: needsHuman('model_not_found'),
  // Also a remote OLLAMA_HOST that cannot be reached (`Head ...: dial tcp ...`): the server's fault, never the model's.
  ollama_unreachable: { ...needsHuman('ollama_unreachable'), fallthrough: 'never' },
  signin_required: needsHuman('signin_required'),
  cli_not_found: { ...needsHuman('cli_not_found'), fallthrough: 'never' },
  // Out of descriptors, processes or memory on the server's machine: neither the model's fault nor
  // lasting. It counts for the task, so a machine that can never spawn still ends in max_retries_exceeded.
  spawn_failed: NOT_NOW,
  // Skipped without spawning: another model may take runs.
  circuit_open: { ...NOT_COUNTED, escalateAtOnce: 'circuit_open', fallthrough: 'always' },
  unsupported_option: { ...NOT_COUNTED, retryable: false, fallthrough: 'always' },
  cancelled: NOT_COUNTED,
  // The server died, not the model: the circuit is left alone. It counts for the task, so a task that
  // kills its server every time (an answer too large for its memory, say) still ends in max_retries_exceeded.
  interrupted: { ...PASSING, fallthrough: 'never' },
  // A blocked attempt repeats the task's earlier escalation (the run service supplies its reason).
  blocked: { ...NOT_COUNTED, retryable: false },
  not_started: NOT_COUNTED,
  invalid_input: { ...NOT_COUNTED, retryable: false },
};
