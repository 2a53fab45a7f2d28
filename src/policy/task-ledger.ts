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
  /**
   * The last attempts whose verdict the entry holds, oldest first (at most {@link RECENT_RUNS}): a
   * server that settles an attempt of a dead one knows by its id whether it was already counted.
   */
  readonly recent: readonly RecordedRun[];
}

/** An attempt whose verdict a task's entry holds. */
export interface RecordedRun {
  readonly runId: string;
  readonly status: RunStatus;
  readonly retryCount: number;
}

/** Attempts remembered per task by id: more than one task runs at once in any real workflow. */
export const RECENT_RUNS = 8;

/** The verdict the entry holds for an attempt, by its id; undefined when it holds none. */
export function recordedRun(entry: TaskLedgerEntry | undefined, runId: string): RecordedRun | undefined {
  return entry?.recent.find((run) => run.runId === runId);
}

/** `retry_count` of an attempt: the task's recorded failure streak, or the caller's figure if larger. */
export function retryCountFor(entry: TaskLedgerEntry | undefined, callerRetryCount: number | undefined): number {
  return Math.max(entry?.failures ?? 0, callerRetryCount ?? 0);
}

export interface AttemptFacts {
  readonly status: RunStatus;
  /** Is it a failed attempt of the task? @default what the status's policy says */
  readonly counted?: boolean;
  readonly retryCount: number;
  readonly runId: string;
  readonly model: string;
  readonly escalationReason: EscalationReason | null;
  readonly now: number;
  /**
   * The attempt whose verdict the task's record names when not this one: an earlier model of the same
   * call (the call could not go on after it). @default this attempt
   */
  readonly standing?: { readonly status: RunStatus; readonly runId: string; readonly model: string };
}

/**
 * The task's entry after one more attempt. A success clears the failure streak and the escalation;
 * nothing else ends an escalation but a reset (the entry's removal): a later attempt that does not
 * escalate by itself keeps the earlier reason.
 */
export function recordAttempt(entry: TaskLedgerEntry | undefined, facts: AttemptFacts): TaskLedgerEntry {
  const policy = OUTCOME_POLICY[facts.status];
  const failed = facts.counted ?? policy.countsAsTaskFailure;
  const last = facts.standing ?? facts;
  const escalationReason = facts.escalationReason ?? (policy.ok ? null : (entry?.escalationReason ?? null));
  const recorded: RecordedRun = { runId: facts.runId, status: facts.status, retryCount: facts.retryCount };
  return {
    attempts: (entry?.attempts ?? 0) + 1,
    failures: policy.ok ? 0 : failed ? facts.retryCount + 1 : (entry?.failures ?? 0),
    totalFailures: (entry?.totalFailures ?? 0) + (failed ? 1 : 0),
    lastStatus: last.status,
    lastRunId: last.runId,
    lastModel: last.model,
    escalated: escalationReason !== null,
    escalationReason,
    firstSeenAt: entry?.firstSeenAt ?? facts.now,
    updatedAt: facts.now,
    recent: [...(entry?.recent ?? []), recorded].slice(-RECENT_RUNS),
  };
}

interface PruneSettings {
  /** Entries untouched this long are dropped (escalated ones: {@link ESCALATED_AGE_FACTOR} times as long). */
  readonly maxAgeMs: number;
  /** At most this many entries are kept (the most recently updated; escalated ones go last). */
  readonly maxEntries: number;
}

/** An escalated task waits for a human: it is kept this many times the TTL unless reset. */
export const ESCALATED_AGE_FACTOR = 4;

/** Old task entries are pruned at most this often (a prune reads every entry). */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * How far the time a prune judges ages by may move past the previous prune's: a day. A forward
 * step of the wall clock then ages the ledger by at most a day per prune, not by the whole step.
 */
const PRUNE_MAX_ADVANCE_MS = 24 * 60 * 60 * 1000;

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
  // No prototype: task ids such as `constructor` stay ordinary keys (see store/state/state-schema.ts `dict`).
  const pruned = Object.create(null) as Record<string, TaskLedgerEntry>;
  for (const [taskId, entry] of fresh) if (!dropped.has(taskId)) pruned[taskId] = entry;
  return pruned;
}
