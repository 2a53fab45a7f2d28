import { OUTCOME_POLICY } from './outcome-policy.js';
import type { RunStatus } from './run-status.js';

/**
 * When a fallback chain moves on to its next model: each status's `fallthrough` in the outcome table
 * (policy/outcome-policy.ts; docs/fallback-chains.md, "When it moves on", mirrors it). `always`: this model cannot serve the call and another may (its circuit
 * is open, it is not installed, it failed in a way that is about the model, or it is a cloud model
 * the account may not use now); `if_time_left`: a timeout moves on only when the call has a
 * `deadline_ms` that leaves time; `never`: Ollama itself cannot serve or is busy, the CLI is missing,
 * the call is over (cancelled, blocked, a deadline passed, bad input), or it succeeded.
 */
/**
 * Another try (the next model, or a busy retry) is started only when at least this much of its time
 * is left: a shorter try would mostly time out while its process starts, and the caller would get a
 * `timeout` for a model that never had a chance.
 */
export const MIN_ATTEMPT_MS = 1_000;

/** At most this many fallback models per call (and per tier rule). */
export const MAX_FALLBACK_MODELS = 5;

interface FallthroughInput {
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
  const rule = OUTCOME_POLICY[status].fallthrough;
  if (rule === 'never') return false;
  if (deadlineAt !== null && deadlineAt - now < MIN_ATTEMPT_MS) return false;
  return rule === 'always' || deadlineAt !== null;
}
