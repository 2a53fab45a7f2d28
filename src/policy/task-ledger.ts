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
}

/** The task's entry after one more attempt. A success clears the failure streak. */
export function recordAttempt(entry: TaskLedgerEntry | undefined, facts: AttemptFacts): TaskLedgerEntry {
  const policy = OUTCOME_POLICY[facts.status];
  const failed = policy.countsAsTaskFailure;
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
  /** Entries untouched for longer than this are dropped. */
  readonly maxAgeMs: number;
  /** At most this many entries are kept (the most recently updated). */
  readonly maxEntries: number;
}

/**
 * Drop stale task entries so the state file stays small. Returns the same object when nothing
 * needed pruning (the common case, cheap: one pass, no sort), so callers can skip the write.
 */
export function pruneTasks(
  tasks: Record<string, TaskLedgerEntry>,
  now: number,
  settings: PruneSettings,
): Record<string, TaskLedgerEntry> {
  const cutoff = now - settings.maxAgeMs;
  const entries = Object.entries(tasks);
  const fresh = entries.filter(([, entry]) => entry.updatedAt >= cutoff);
  if (fresh.length === entries.length && entries.length <= settings.maxEntries) return tasks;
  const kept =
    fresh.length > settings.maxEntries
      ? fresh.sort(([, a], [, b]) => b.updatedAt - a.updatedAt).slice(0, settings.maxEntries)
      : fresh;
  // No prototype: task ids such as `constructor` stay ordinary keys (see store/state-schema.ts `dict`).
  const pruned = Object.create(null) as Record<string, TaskLedgerEntry>;
  for (const [taskId, entry] of kept) pruned[taskId] = entry;
  return pruned;
}
