import { BUSY_STATUSES } from '../policy/busy-backoff.js';
import { compareText } from './format.js';
import type { RunLine } from './run-line.js';
import type { Chains } from './summary-schema.js';

/** Chains whose last line has not come yet, kept at most (the oldest are dropped). */
const MAX_OPEN_CHAINS = 10_000;
const MAX_ROWS = 500;

interface Row {
  calls: number;
  fellThrough: number;
  readonly to: Map<string, { calls: number; ok: number }>;
}

/**
 * Fallback chains (lines sharing a `chain_id`, one per model tried, `chain_step` 0, 1, ...) and
 * busy retries (`will_retry` lines with `server_busy` / `rate_limited` / `spawn_failed`). A chain is counted at its
 * last line (the one without `will_retry`): how often each first model fell through, and to which
 * model. Lines of one call come from one process in order, so reading order is enough.
 */
export class ChainAccumulator {
  readonly #open = new Map<string, string[]>();
  readonly #rows = new Map<string, Row>();
  #calls = 0;
  #fellThrough = 0;
  #busyRetries = 0;
  #busyGaveUp = 0;

  /** A selected run line, those the server retried included. */
  add(line: RunLine): void {
    const { chainId, model, status, willRetry, busyTry } = line;
    if (willRetry && BUSY_STATUSES.has(status)) this.#busyRetries += 1;
    if (!willRetry && BUSY_STATUSES.has(status) && typeof busyTry === 'number' && busyTry > 0) this.#busyGaveUp += 1;
    if (typeof chainId !== 'string' || chainId === '') return;
    let models = this.#open.get(chainId);
    if (models === undefined) {
      models = [];
      this.#open.set(chainId, models);
      if (this.#open.size > MAX_OPEN_CHAINS) this.#open.delete(this.#open.keys().next().value!);
    }
    if (models[models.length - 1] !== model) models.push(model);
    if (willRetry) return;
    this.#open.delete(chainId);
    this.#count(models, model, status);
  }

  /** A chain that ended: its first model's row, and where it fell through to. */
  #count(models: readonly string[], last: string, status: string): void {
    const first = models[0]!;
    let row = this.#rows.get(first);
    if (row === undefined) {
      if (this.#rows.size >= MAX_ROWS) return;
      row = { calls: 0, fellThrough: 0, to: new Map() };
      this.#rows.set(first, row);
    }
    this.#calls += 1;
    row.calls += 1;
    if (models.length === 1) return;
    this.#fellThrough += 1;
    row.fellThrough += 1;
    const to = row.to.get(last) ?? { calls: 0, ok: 0 };
    to.calls += 1;
    if (status === 'ok') to.ok += 1;
    row.to.set(last, to);
  }

  result(): Chains {
    return {
      calls: this.#calls,
      fell_through: this.#fellThrough,
      rows: mostCallsFirst(this.#rows).map(([first, row]) => ({
        first_model: first,
        calls: row.calls,
        fell_through: row.fellThrough,
        to: mostCallsFirst(row.to).map(([model, { calls, ok }]) => ({ model, calls, ok })),
      })),
      busy_retries: this.#busyRetries,
      busy_gave_up: this.#busyGaveUp,
    };
  }
}

/** Most calls first, then by name. */
function mostCallsFirst<T extends { calls: number }>(map: ReadonlyMap<string, T>): [string, T][] {
  return [...map].sort(([a, x], [b, y]) => y.calls - x.calls || compareText(a, b));
}
