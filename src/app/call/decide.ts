import { decideBusyRetry } from '../../policy/busy-backoff.js';
import { fallsThrough } from '../../policy/fallback.js';
import type { RunStatus } from '../../policy/run-status.js';

/** What a call does after an attempt: end with it, retry the model after a wait, or try the next model. */
export type Next = { readonly kind: 'stop' } | { readonly kind: 'busy'; readonly waitMs: number } | { readonly kind: 'fallback' };

export const STOP: Next = { kind: 'stop' };

interface DecideInput {
  readonly status: RunStatus;
  /** The attempt's busy try (0 for the model's first attempt in the call). */
  readonly busyTry: number;
  /** OLLAMA_MCP_BUSY_RETRIES. */
  readonly busyRetries: number;
  /** Epoch ms. */
  readonly now: number;
  /** Epoch ms by which the model's answer must have begun (its start allowance, or the call's deadline). */
  readonly budgetEndsAt: number;
  /** Epoch ms by which the whole call ends; null: none. */
  readonly deadlineAt: number | null;
  /** Is there a model after this one in the chain? */
  readonly hasNext: boolean;
  /** [0, 1), for the backoff's jitter. */
  readonly random: () => number;
}

/**
 * What the call does after an attempt ended with `status`. Pure: a "not now" is retried on the same
 * model after a jittered wait while the budget allows (policy/busy-backoff.ts); a model that cannot
 * serve hands the call to the next one when the fallback table says so (policy/fallback.ts).
 */
export function decide(input: DecideInput): Next {
  const { status, busyTry, busyRetries, now, budgetEndsAt, random, hasNext, deadlineAt } = input;
  const busy = decideBusyRetry({ status, retriesDone: busyTry, maxRetries: busyRetries, now, budgetEndsAt, random });
  if (busy.retry) return { kind: 'busy', waitMs: busy.waitMs };
  return fallsThrough({ status, hasNext, now, deadlineAt }) ? { kind: 'fallback' } : STOP;
}
