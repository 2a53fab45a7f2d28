import { OUTCOME_POLICY } from './outcome-policy.js';
import { RUN_STATUSES, type RunStatus } from './run-status.js';
import { MIN_ATTEMPT_MS } from './fallback.js';

/**
 * Backoff inside one call when the answer is "not now". Pure: the random source and the time are
 * passed in.
 *
 * Three "not now" answers are retried: Ollama's `server_busy` (503, its queue is full; typically
 * clears within a second or two) and `rate_limited` (429, a cloud account's usage limit; a burst
 * limit may lift within the wait, an hourly or weekly quota will not), and the machine's own
 * `spawn_failed` (no descriptor, process or memory left to start the CLI; another run ending frees
 * them). The waits are short and bounded by the call's own budget, so a limit that does not lift
 * costs a few seconds at most before the next model of a fallback chain, or the caller, gets the status.
 */
export const BUSY_STATUSES: ReadonlySet<string> = new Set(RUN_STATUSES.filter((status) => OUTCOME_POLICY[status].busy));

/** The first retry waits up to `baseMs`; no wait is longer than `capMs`. */
export const BUSY_BACKOFF = { baseMs: 250, capMs: 4_000 } as const;

/**
 * The wait before busy retry `retry` (1 = the first): "full jitter", a uniform draw in
 * `[0, min(cap, base × 2^(retry-1)))`, so several callers turned away at the same moment do not
 * come back at the same moment. `random` returns a number in [0, 1), like Math.random.
 */
export function busyBackoffMs(retry: number, random: () => number): number {
  const ceiling = Math.min(BUSY_BACKOFF.capMs, BUSY_BACKOFF.baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(Math.min(Math.max(random(), 0), 0.999_999) * ceiling);
}

interface BusyRetryInput {
  readonly status: RunStatus;
  /** Busy retries already done for this model in this call. */
  readonly retriesDone: number;
  /** OLLAMA_MCP_BUSY_RETRIES. */
  readonly maxRetries: number;
  /** Epoch ms. */
  readonly now: number;
  /** Epoch ms by which this model's tries must end (its timeout from its first try, cut to the call's deadline). */
  readonly budgetEndsAt: number;
  readonly random: () => number;
}

type BusyRetryDecision = { readonly retry: true; readonly waitMs: number } | { readonly retry: false };

/** Retry a busy answer after a wait? Only while retries are left and the wait leaves time for another try. */
export function decideBusyRetry(input: BusyRetryInput): BusyRetryDecision {
  if (!OUTCOME_POLICY[input.status].busy || input.retriesDone >= input.maxRetries) return { retry: false };
  const waitMs = busyBackoffMs(input.retriesDone + 1, input.random);
  if (input.now + waitMs + MIN_ATTEMPT_MS > input.budgetEndsAt) return { retry: false };
  return { retry: true, waitMs };
}
