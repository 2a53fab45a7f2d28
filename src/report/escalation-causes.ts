import { compareText, isoOrNull } from './format.js';
import type { RunLine } from './run-line.js';
import type { EscalationCause } from './summary-schema.js';

/** Distinct causes kept; past it `escalation_causes_truncated`. */
const MAX_CAUSES = 200;
/** Distinct task ids counted per cause. */
const MAX_TASKS_PER_CAUSE = 1000;
const EXAMPLES = 3;

interface Cause {
  readonly model: string;
  readonly reason: string | null;
  readonly status: string;
  escalations: number;
  readonly tasks: Set<string>;
  firstMs: number;
  lastMs: number;
  /** Most recent first. */
  examples: string[];
  error: string | null;
}

/**
 * Escalations grouped by cause (model + escalation_reason + status), so that 32 escalated tasks
 * with three causes read as three rows: count, first and last time, a few task ids, the error.
 * Refusals of a task already escalated (`blocked`) are not a new cause and are left out.
 */
export class EscalationCauses {
  readonly #causes = new Map<string, Cause>();
  #truncated = false;

  /** A selected escalating run the caller saw. */
  add(line: RunLine): void {
    const { model, reason, status, taskId, tsMs, error } = line;
    if (status === 'blocked') return;
    const key = `${model}\u0000${reason ?? ''}\u0000${status}`;
    let cause = this.#causes.get(key);
    if (cause === undefined) {
      if (this.#causes.size >= MAX_CAUSES) {
        this.#truncated = true;
        return;
      }
      cause = {
        model,
        reason,
        status,
        escalations: 0,
        tasks: new Set(),
        firstMs: Infinity,
        lastMs: -Infinity,
        examples: [],
        error: null,
      };
      this.#causes.set(key, cause);
    }
    cause.escalations += 1;
    if (taskId !== null && cause.tasks.size < MAX_TASKS_PER_CAUSE) cause.tasks.add(taskId);
    const t = Number.isFinite(tsMs) ? tsMs : -Infinity;
    if (t < cause.firstMs) cause.firstMs = t;
    if (t >= cause.lastMs) {
      cause.lastMs = t;
      if (error !== null) cause.error = error;
      if (taskId !== null && !cause.examples.includes(taskId)) cause.examples = [taskId, ...cause.examples].slice(0, EXAMPLES);
    } else if (cause.error === null) cause.error = error;
  }

  /** The causes, most escalations first; whether more were seen than kept. */
  result(): { rows: EscalationCause[]; truncated: boolean } {
    const rows = [...this.#causes.values()]
      .sort((a, b) => b.escalations - a.escalations || b.lastMs - a.lastMs || compareText(a.model, b.model))
      .map((c) => ({
        model: c.model,
        reason: c.reason,
        status: c.status,
        escalations: c.escalations,
        tasks: c.tasks.size,
        first_ts: isoOrNull(c.firstMs),
        last_ts: isoOrNull(c.lastMs),
        example_tasks: c.examples,
        error: c.error,
      }));
    return { rows, truncated: this.#truncated };
  }
}
