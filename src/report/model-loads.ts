import { compareText } from './format.js';
import type { RunLine } from './run-line.js';
import type { ModelLoadRow } from './summary-schema.js';

/**
 * A line whose `usage.load_ms` reaches this loaded its model: the server's own rule for a result's
 * `cold_load`. A model already loaded answers with a `load_ms` of a few ms.
 */
export const LOAD_MS = 100;
/** A model loaded this many times a day, or more, for at most twice as many runs looks like thrash. */
const THRASH_LOADS = 3;
const DAY_MS = 86_400_000;
/** Days counted, the most recent; older ones are dropped and `loads_truncated` says so. */
const MAX_DAYS = 200;
/** Rows listed at most: whole days, the most recent (a day has at most one row per model row, 501). */
const MAX_ROWS = 1000;

interface DayCounts {
  runs: number;
  loads: number;
  loadMs: number;
}

/**
 * Model loads per UTC day and model, so that thrash shows: models pushing each other out of memory
 * reload call after call. Counts `maxDays` days at most, times the summary's model rows (at most 501).
 */
export class ModelLoads {
  /** Day number since the epoch -> model row -> counts. */
  readonly #days = new Map<number, Map<string, DayCounts>>();
  #truncated = false;

  constructor(
    readonly maxDays = MAX_DAYS,
    readonly maxRows = MAX_ROWS,
  ) {}

  /** A selected line, its model already the row's name; those without a usable `ts` have no day. */
  add(line: RunLine): void {
    if (!Number.isFinite(line.tsMs)) return;
    const counts = this.#countsOf(Math.floor(line.tsMs / DAY_MS), line.model);
    if (counts === null) return;
    if (!line.willRetry) counts.runs += 1; // the caller's runs, as in `models[].runs`
    const load = loadOf(line);
    if (load === null) return;
    counts.loads += 1;
    counts.loadMs += load;
  }

  /** Rows with at least one load, oldest day first, then most loads; whether older days were left out. */
  result(): { rows: ModelLoadRow[]; truncated: boolean } {
    const days: ModelLoadRow[][] = [];
    let listed = 0;
    for (const day of [...this.#days.keys()].sort((a, b) => b - a)) {
      const rows = this.#rowsOf(day);
      if (listed + rows.length > this.maxRows) return { rows: days.reverse().flat(), truncated: true };
      days.push(rows);
      listed += rows.length;
    }
    return { rows: days.reverse().flat(), truncated: this.#truncated };
  }

  /** The day's models that were loaded, most loads first. */
  #rowsOf(day: number): ModelLoadRow[] {
    const date = new Date(day * DAY_MS).toISOString().slice(0, 10);
    return [...this.#days.get(day)!]
      .filter(([, c]) => c.loads > 0)
      .map(([model, c]) => ({ day: date, model, loads: c.loads, load_ms: Math.round(c.loadMs), runs: c.runs }))
      .sort((a, b) => b.loads - a.loads || compareText(a.model, b.model));
  }

  /** The counts of `model` on `day`; null when the day is older than the `maxDays` kept. */
  #countsOf(day: number, model: string): DayCounts | null {
    let models = this.#days.get(day);
    if (models === undefined) {
      if (this.#days.size >= this.maxDays) {
        this.#truncated = true;
        const oldest = Math.min(...this.#days.keys());
        if (day < oldest) return null;
        this.#days.delete(oldest);
      }
      models = new Map();
      this.#days.set(day, models);
    }
    let counts = models.get(model);
    if (counts === undefined) {
      counts = { runs: 0, loads: 0, loadMs: 0 };
      models.set(model, counts);
    }
    return counts;
  }
}

/**
 * The load time of a line that loaded its model (0 when unknown), or null when it did not or does not
 * say: its `cold_load` when it has one, else its `usage.load_ms` against `LOAD_MS`.
 */
/** The load time of a line that loaded its model, else null. */
export function loadOf(line: RunLine): number | null {
  const ms = line.usage?.load_ms;
  const loadMs = typeof ms === 'number' && ms >= 0 ? ms : null;
  const loaded = line.coldLoad ?? (loadMs !== null && loadMs >= LOAD_MS);
  return loaded ? (loadMs ?? 0) : null;
}

/**
 * Whether a day's loads of a model look like thrash: at least `THRASH_LOADS`, and one for every two
 * runs or more. A model kept loaded between runs is loaded once or a few times a day.
 */
export function looksLikeThrash(row: Pick<ModelLoadRow, 'loads' | 'runs'>): boolean {
  return row.loads >= THRASH_LOADS && row.loads * 2 >= row.runs;
}

/** The days x models with the most loads first (then the most recent day, then by name): the order they are shown in. */
export function mostLoadsFirst(rows: readonly ModelLoadRow[]): ModelLoadRow[] {
  return [...rows].sort((a, b) => b.loads - a.loads || compareText(b.day, a.day) || compareText(a.model, b.model));
}
