import { compareText, isoOrNull } from './format.js';
import type { ControlLine, RunLine } from './run-line.js';
import type { Attention, AttentionTask, OpenCircuit } from './summary-schema.js';

/** Unresolved escalated tasks kept (the most recently escalated); the map is pruned back when it reaches twice this. */
const MAX_TASKS = 1000;
/** Resolutions remembered for a task not (yet) seen escalated, when lines are not in time order (several dirs). */
const MAX_EARLY_RESOLUTIONS = 50_000;
/** Models whose circuit is followed. */
const MAX_CIRCUITS = 10_000;

interface CircuitNow {
  state: string;
  tsMs: number;
  openedMs: number;
  failures: number;
  /** When the cooldown ends (`ts` + `retry_after_seconds`), or NaN when unknown. */
  retryAtMs: number;
  lastError: string | null;
}

interface TaskNow {
  model: string;
  reason: string | null;
  status: string;
  tsMs: number;
  escalations: number;
  blocked: number;
  lastError: string | null;
}

/**
 * What needs a human now: circuits the log last left open, and tasks escalated and not resolved
 * since (a `reset_task` control record, or a later `ok` run of the task, resolves one). Fed every
 * run and control record in reading order; decisions go by `ts`, so lines from several processes
 * or directories slightly out of order do not confuse it. Bounded memory (see the constants).
 */
export class AttentionTracker {
  readonly #circuits = new Map<string, CircuitNow>();
  readonly #tasks = new Map<string, TaskNow>();
  readonly #early: Map<string, number> | null;
  #truncated = false;

  /** @param outOfOrder lines may come far out of `ts` order (several directories read one after the other) */
  constructor(outOfOrder: boolean) {
    this.#early = outOfOrder ? new Map() : null;
  }

  /** A run line, whatever the filters of time and status (will_retry ones included: they move circuits too). */
  run(line: RunLine): void {
    if (typeof line.circuit?.state === 'string') this.#moveCircuit(line, line.circuit, line.circuit.state);
    if (line.taskId === null || line.willRetry) return; // the caller never saw a will_retry line
    if (line.status === 'ok') this.#resolve(line.taskId, line.tsMs);
    else if (line.escalate) this.#escalate(line.taskId, line);
  }

  /** A control record: `reset_task` resolves its task, `reset_circuit` closes its model's circuit. */
  control(line: ControlLine): void {
    const { action, taskId, model, tsMs } = line;
    if (action === 'reset_task' && taskId !== null) this.#resolve(taskId, tsMs);
    if (action === 'reset_circuit' && model !== null) {
      const known = this.#circuits.get(model);
      if (known !== undefined && !(tsMs < known.tsMs))
        this.#circuits.set(model, { ...known, state: 'closed', tsMs, openedMs: NaN, failures: 0, retryAtMs: NaN });
    }
  }

  /** The circuit as this line left it, unless a line with a later `ts` already spoke of it. */
  #moveCircuit(line: RunLine, c: Readonly<Record<string, unknown>>, state: string): void {
    const known = this.#circuits.get(line.model);
    const t = Number.isFinite(line.tsMs) ? line.tsMs : -Infinity;
    if (known !== undefined && t < known.tsMs) return;
    const now: CircuitNow = {
      state,
      tsMs: t,
      openedMs: line.opening !== null ? t : state === 'closed' ? NaN : (known?.openedMs ?? NaN),
      failures: typeof c.consecutive_failures === 'number' ? c.consecutive_failures : 0,
      retryAtMs: typeof c.retry_after_seconds === 'number' && Number.isFinite(t) ? t + c.retry_after_seconds * 1000 : NaN,
      lastError: lastCircuitError(line, known),
    };
    if (known !== undefined || this.#circuits.size < MAX_CIRCUITS) this.#circuits.set(line.model, now);
  }

  #escalate(taskId: string, line: RunLine): void {
    const { tsMs, status } = line;
    const early = this.#early?.get(taskId);
    if (early !== undefined && early >= tsMs) return; // reset or answered after this escalation
    const blocked = status === 'blocked';
    const entry = this.#tasks.get(taskId);
    if (entry === undefined) {
      const { model, reason, error: lastError } = line;
      this.#tasks.set(taskId, { model, reason, status, tsMs, escalations: blocked ? 0 : 1, blocked: blocked ? 1 : 0, lastError });
      if (this.#tasks.size >= 2 * MAX_TASKS) this.#prune();
      return;
    }
    if (blocked) entry.blocked += 1;
    else entry.escalations += 1;
    if (tsMs < entry.tsMs) return;
    if (!blocked) {
      entry.model = line.model;
      entry.reason = line.reason;
      entry.status = status;
    }
    entry.tsMs = tsMs;
    if (line.error !== null) entry.lastError = line.error;
  }

  #resolve(taskId: string, tsMs: number): void {
    const entry = this.#tasks.get(taskId);
    if (entry !== undefined && !(tsMs < entry.tsMs)) this.#tasks.delete(taskId);
    if (this.#early !== null) {
      const before = this.#early.get(taskId);
      if (before === undefined || tsMs > before) {
        this.#early.delete(taskId);
        this.#early.set(taskId, tsMs);
        if (this.#early.size > MAX_EARLY_RESOLUTIONS) this.#early.delete(this.#early.keys().next().value!);
      }
    }
  }

  #prune(): void {
    const keep = [...this.#tasks.entries()].sort(([, a], [, b]) => b.tsMs - a.tsMs).slice(0, MAX_TASKS);
    this.#tasks.clear();
    for (const [k, v] of keep) this.#tasks.set(k, v);
    this.#truncated = true;
  }

  result(): Attention {
    const circuits: OpenCircuit[] = [...this.#circuits]
      .filter(([, c]) => c.state === 'open' || c.state === 'half_open')
      .sort(([a], [b]) => compareText(a, b))
      .map(([model, c]) => ({
        model,
        state: c.state,
        since: isoOrNull(c.openedMs),
        consecutive_failures: c.failures,
        retry_at: Number.isNaN(c.retryAtMs) ? null : new Date(c.retryAtMs).toISOString(),
        last_error: c.lastError,
      }));
    const total = this.#tasks.size;
    const rows = [...this.#tasks.entries()].sort(([ia, a], [ib, b]) => b.tsMs - a.tsMs || compareText(ia, ib));
    const tasks: AttentionTask[] = rows.slice(0, MAX_TASKS).map(([taskId, t]) => ({
      task_id: taskId,
      model: t.model,
      reason: t.reason,
      status: t.status,
      escalated_at: isoOrNull(t.tsMs),
      escalations: t.escalations,
      blocked: t.blocked,
      last_error: t.lastError,
    }));
    return {
      circuits_open: circuits,
      tasks,
      tasks_total: this.#truncated ? Math.max(total, MAX_TASKS) : total,
      blocked_tasks: rows.filter(([, t]) => t.blocked > 0).length,
    };
  }
}

/** A rejection (circuit_open) says the circuit is open, not why: the failure that opened it is kept. */
function lastCircuitError(line: RunLine, known: CircuitNow | undefined): string | null {
  if (line.status === 'ok') return null;
  if (line.status === 'circuit_open') return known?.lastError ?? line.error;
  return line.error ?? known?.lastError ?? null;
}
