import { OUTCOME_POLICY } from './outcome-policy.js';
import type { RunStatus } from './run-status.js';

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

/**
 * Does the chain go on to its next model after a model's attempt ended with `status`? As the status's
 * `fallthrough` in the outcome table says (docs/fallback-chains.md, "When it moves on", mirrors it).
 */
export function fallsThrough({ status, hasNext, now, deadlineAt }: FallthroughInput): boolean {
  if (!hasNext) return false;
  const rule = OUTCOME_POLICY[status].fallthrough;
  if (rule === 'never') return false;
  if (deadlineAt !== null && deadlineAt - now < MIN_ATTEMPT_MS) return false;
  return rule === 'always' || deadlineAt !== null;
}
