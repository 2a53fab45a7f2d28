import { compareText, isoOrNull } from './format.js';
import type { RunLine } from './run-line.js';
import type { EscalatedTask } from './summary-schema.js';

interface TaskEntry {
  model: string;
  attempts: number;
  escalations: number;
  lastStatus: string;
  lastError: string | null;
  reason: string | null;
  lastTsMs: number;
}

/**
 * The escalated tasks of the selected runs, in bounded memory: a full row for at most
 * `maxEscalated` tasks (the most recently active by `ts`), and the attempt counts of the
 * `maxTracked` most recently seen tasks not (yet) escalated, so that a task's row counts the
 * attempts before its escalation too.
 */
export class EscalatedTasks {
  readonly #maxEscalated: number;
  /**
   * Attempt counts in two generations of `maxTracked / 2`: when the young one is full, the old one is
   * dropped (cheaper than one Map evicting its oldest key, which V8 makes O(n) after deletions).
   */
  readonly #generationSize: number;
  #young = new Map<string, number>();
  #old = new Map<string, number>();
  readonly #escalated = new Map<string, TaskEntry>();
  #truncated = false;
  #withoutTask = 0;

  constructor(maxEscalated: number, maxTracked: number) {
    this.#maxEscalated = maxEscalated;
    this.#generationSize = Math.max(1, Math.floor(maxTracked / 2));
  }

  /** A selected run the caller saw (not one the server retried). */
  add(line: RunLine): void {
    if (line.taskId === null) {
      if (line.escalate) this.#withoutTask += 1;
      return;
    }
    const entry = this.#escalated.get(line.taskId);
    if (entry !== undefined) this.#update(entry, line);
    else if (line.escalate) this.#start(line.taskId, line);
    else this.#count(line.taskId);
  }

  /**
   * The rows, most recent `last_ts` first (then by id), at most `maxEscalated`; whether more tasks
   * escalated than were kept; the escalating runs without a task id.
   */
  result(): { rows: EscalatedTask[]; truncated: boolean; withoutTask: number } {
    this.#prune();
    const rows = [...this.#escalated.entries()]
      .sort(([ia, a], [ib, b]) => newestFirst(a.lastTsMs, b.lastTsMs) || compareText(ia, ib))
      .map(([taskId, e]) => ({
        task_id: taskId,
        model: e.model,
        attempts: e.attempts,
        escalations: e.escalations,
        last_status: e.lastStatus,
        last_error: e.lastError,
        escalation_reason: e.reason,
        last_ts: isoOrNull(e.lastTsMs),
      }));
    return { rows, truncated: this.#truncated, withoutTask: this.#withoutTask };
  }

  #count(taskId: string): void {
    const young = this.#young.get(taskId);
    if (young !== undefined) {
      this.#young.set(taskId, young + 1);
      return;
    }
    const old = this.#old.get(taskId) ?? 0;
    this.#old.delete(taskId);
    if (this.#young.size >= this.#generationSize) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(taskId, old + 1);
  }

  /** The attempts counted for a task before it escalated, forgotten from the counts. */
  #take(taskId: string): number {
    const seen = (this.#young.get(taskId) ?? 0) + (this.#old.get(taskId) ?? 0);
    this.#young.delete(taskId);
    this.#old.delete(taskId);
    return seen;
  }

  #start(taskId: string, line: RunLine): void {
    this.#escalated.set(taskId, {
      model: line.model,
      attempts: Math.max(this.#take(taskId) + 1, line.retryCount + 1),
      escalations: 1,
      lastStatus: line.status,
      lastError: line.status === 'ok' ? null : line.error,
      reason: line.reason,
      lastTsMs: Number.isFinite(line.tsMs) ? line.tsMs : -Infinity,
    });
    // Pruned back to the limit each time it doubles: amortized O(1) per line.
    if (this.#escalated.size >= 2 * this.#maxEscalated) this.#prune();
  }

  #update(entry: TaskEntry, line: RunLine): void {
    entry.attempts += 1;
    if (line.escalate) {
      entry.escalations += 1;
      entry.reason = line.reason;
    }
    // Lines from several processes are nearly, not exactly, in time order: an older line does not
    // replace what a newer one said.
    const hasTs = Number.isFinite(line.tsMs);
    if (hasTs && line.tsMs < entry.lastTsMs) return;
    entry.model = line.model;
    entry.lastStatus = line.status;
    if (line.status !== 'ok' && line.error !== null) entry.lastError = line.error;
    if (hasTs) entry.lastTsMs = line.tsMs;
  }

  /** Keeps the `maxEscalated` most recently active escalated tasks (by ts). */
  #prune(): void {
    if (this.#escalated.size <= this.#maxEscalated) return;
    const keep = [...this.#escalated.entries()]
      .sort(([, a], [, b]) => newestFirst(a.lastTsMs, b.lastTsMs))
      .slice(0, this.#maxEscalated);
    this.#escalated.clear();
    for (const [taskId, entry] of keep) this.#escalated.set(taskId, entry);
    this.#truncated = true;
  }
}

/** Descending, with -Infinity (no ts) last. */
function newestFirst(a: number, b: number): number {
  return a > b ? -1 : a < b ? 1 : 0;
}
