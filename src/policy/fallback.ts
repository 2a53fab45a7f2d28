import type { RunStatus } from './run-status.js';

/**
 * When a fallback chain moves on to its next model. Pure; docs/fallback-chains.md ("When it moves on")
 * mirrors this table.
 *
 * - `always`: this model cannot serve the call, and another model may: its circuit is open (skipped
 *   without spawning), it is not installed, it failed in a way that is about the model (crashed or
 *   failed to load, empty answer, runaway output, cannot write text, cannot honour the call's option,
 *   prompt over its context window), or it is a cloud model the account may not use now
 *   (sign-in, subscription, quota, registry unreachable while pulling it).
 * - `if_time_left`: a timeout (of the answer, or of its start) moves on only when the call has a
 *   `deadline_ms` that leaves time: without one the caller's budget was a model's limits, and they are spent.
 * - `never`: the call ends here. Ollama itself cannot be reached or is busy (another model of the same
 *   server cannot help; busy gets its own backoff), the CLI is missing or the machine could not start
 *   it now (another model on the same machine cannot help either), the caller cancelled, the task
 *   is blocked, a batch deadline passed, the arguments or a file the prompt names are wrong (every model
 *   would fail the same way), or it succeeded.
 */
export type FallthroughRule = 'always' | 'if_time_left' | 'never';

export const FALLTHROUGH: Readonly<Record<RunStatus, FallthroughRule>> = {
  ok: 'never',
  timeout: 'if_time_left',
  start_timeout: 'if_time_left',
  model_not_found: 'always',
  ollama_unreachable: 'never',
  server_busy: 'never',
  pull_failed: 'always',
  signin_required: 'always',
  cloud_access_denied: 'always',
  rate_limited: 'always',
  prompt_too_long: 'always',
  model_unsupported: 'always',
  input_file_error: 'never',
  empty_output: 'always',
  output_limit: 'always',
  crashed: 'always',
  cli_not_found: 'never',
  spawn_failed: 'never',
  circuit_open: 'always',
  unsupported_option: 'always',
  cancelled: 'never',
  interrupted: 'never',
  blocked: 'never',
  not_started: 'never',
  invalid_input: 'never',
};

/**
 * Another try (the next model, or a busy retry) is started only when at least this much of its time
 * is left: a shorter try would mostly time out while its process starts, and the caller would get a
 * `timeout` for a model that never had a chance.
 */
export const MIN_ATTEMPT_MS = 1_000;

/** At most this many fallback models per call (and per tier rule). */
export const MAX_FALLBACK_MODELS = 5;

export interface FallthroughInput {
  readonly status: RunStatus;
  /** Is there a model after this one in the chain? */
  readonly hasNext: boolean;
  /** Epoch ms. */
  readonly now: number;
  /** Epoch ms by which the whole call must end (deadline_ms, or a batch deadline); null when none. */
  readonly deadlineAt: number | null;
}

/** Does the chain go on to its next model after a model's attempt ended with `status`? */
export function fallsThrough({ status, hasNext, now, deadlineAt }: FallthroughInput): boolean {
  if (!hasNext) return false;
  const rule = FALLTHROUGH[status];
  if (rule === 'never') return false;
  if (deadlineAt !== null && deadlineAt - now < MIN_ATTEMPT_MS) return false;
  return rule === 'always' || deadlineAt !== null;
}
