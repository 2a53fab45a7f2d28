import type { EscalationReason, RunStatus } from './run-status.js';
import { OUTCOME_POLICY } from './outcome-policy.js';

/** What the server remembers about one `task_id`, across restarts and processes. Times in epoch ms. */
export interface TaskLedgerEntry {
  /** Every recorded attempt, rejected ones included. */
  readonly attempts: number;
  /** Failed attempts since the last success: the `retry_count` of the next attempt. */
  readonly failures: number;
  /** Failed attempts over the task's whole life. */
  readonly totalFailures: number;
  readonly lastStatus: RunStatus;
  readonly lastRunId: string;
  readonly lastModel: string;
  /** Did the last attempt tell the caller to escalate? */
  readonly escalated: boolean;
  readonly escalationReason: EscalationReason | null;
  readonly firstSeenAt: number;
  readonly updatedAt: number;
}

/** `retry_count` of an attempt: the task's recorded failure streak, or the caller's figure if larger. */
export function retryCountFor(entry: TaskLedgerEntry | undefined, callerRetryCount: number | undefined): number {
  return Math.max(entry?.failures ?? 0, callerRetryCount ?? 0);
}

export interface AttemptFacts {
  readonly status: RunStatus;
  readonly retryCount: number;
  readonly runId: string;
  readonly model: string;
  readonly escalationReason: EscalationReason | null;
  readonly now: number;
  /** The server's own misjudgement caused the failure: recorded, not counted (see EscalationInput.excused). */
  readonly excused?: boolean;
}

/** The task's entry after one more attempt. A success clears the failure streak. */
export function recordAttempt(entry: TaskLedgerEntry | undefined, facts: AttemptFacts): TaskLedgerEntry {
  const policy = OUTCOME_POLICY[facts.status];
  const failed = policy.countsAsTaskFailure && facts.excused !== true;
  return {
    attempts: (entry?.attempts ?? 0) + 1,
    failures: policy.ok ? 0 : failed ? facts.retryCount + 1 : (entry?.failures ?? 0),
    totalFailures: (entry?.totalFailures ?? 0) + (failed ? 1 : 0),
    lastStatus: facts.status,
    lastRunId: facts.runId,
    lastModel: facts.model,
    escalated: facts.escalationReason !== null,
    escalationReason: facts.escalationReason,
    firstSeenAt: entry?.firstSeenAt ?? facts.now,
    updatedAt: facts.now,
  };
}

export interface PruneSettings {
  /** Entries untouched this long are dropped (escalated ones: {@link ESCALATED_AGE_FACTOR} times as long). */
  readonly maxAgeMs: number;
  /** At most this many entries are kept (the most recently updated; escalated ones go last). */
  readonly maxEntries: number;
}

/** An escalated task waits for a human: it is kept this many times the TTL unless reset. */
export const ESCALATED_AGE_FACTOR = 4;

/** Old task entries are pruned at most this often (a prune reads every entry). */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * How far the time a prune judges ages by may move past the previous prune's: a day. A forward
 * step of the wall clock then ages the ledger by at most a day per prune, not by the whole step.
 */
export const PRUNE_MAX_ADVANCE_MS = 24 * 60 * 60 * 1000;

/** The `prunedAt` of a ledger that prunes itself (Redis expires its keys): a prune is never due. */
export const NEVER_PRUNE = Number.MAX_SAFE_INTEGER;

/** Is a prune due? After an hour, or at once when the last one is dated ahead of `now` (the clock stepped back). */
export function pruneDue(prunedAt: number, now: number): boolean {
  if (prunedAt === NEVER_PRUNE) return false;
  return now - prunedAt >= PRUNE_EVERY_MS || prunedAt > now;
}

/**
 * The time a prune judges ages by: `now`, but at most {@link PRUNE_MAX_ADVANCE_MS} past the time
 * the previous prune judged by (`previous`, 0 when there was none).
 */
export function pruneClock(previous: number, now: number): number {
  return previous > 0 ? Math.min(now, previous + PRUNE_MAX_ADVANCE_MS) : now;
}

/**
 * Drop stale task entries so the ledger stays small: those untouched for the TTL (escalated ones:
 * 4 times it), then the oldest beyond `maxEntries`, those that did not escalate first. Returns the
 * same object when nothing needed pruning (the common case: one pass, no sort), so callers can
 * skip the write; otherwise a new map in the same order.
 */
export function pruneTasks(
  tasks: Record<string, TaskLedgerEntry>,
  now: number,
  settings: PruneSettings,
): Record<string, TaskLedgerEntry> {
  const cutoff = now - settings.maxAgeMs;
  const escalatedCutoff = now - ESCALATED_AGE_FACTOR * settings.maxAgeMs;
  const entries = Object.entries(tasks);
  const fresh = entries.filter(([, entry]) => entry.updatedAt > (entry.escalated ? escalatedCutoff : cutoff));
  if (fresh.length === entries.length && entries.length <= settings.maxEntries) return tasks;
  const dropped = new Set<string>();
  if (fresh.length > settings.maxEntries) {
    // Evict the oldest first, escalated tasks only once no other is left.
    const byEviction = [...fresh].sort(([, a], [, b]) => Number(a.escalated) - Number(b.escalated) || a.updatedAt - b.updatedAt);
    for (const [taskId] of byEviction.slice(0, fresh.length - settings.maxEntries)) dropped.add(taskId);
  }
  // No prototype: task ids such as `constructor` stay ordinary keys (see store/state-schema.ts `dict`).
  const pruned = Object.create(null) as Record<string, TaskLedgerEntry>;
  for (const [taskId, entry] of fresh) if (!dropped.has(taskId)) pruned[taskId] = entry;
  return pruned;
}
