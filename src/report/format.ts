import { RUN_STATUSES } from '../policy/run-status.js';
import type { ModelSummary, SummaryFiltersView } from './summary-schema.js';

// How the report orders and writes figures, times and texts: shared by the summary, the text
// report, the HTML page and the charts.

const STATUS_ORDER = new Map<string, number>(RUN_STATUSES.map((status, index) => [status, index]));
const statusRank = (status: string): number => STATUS_ORDER.get(status) ?? RUN_STATUSES.length;

/** The failure table's status order (RUN_STATUSES), then unknown statuses by name. */
export function compareStatuses(a: string, b: string): number {
  return statusRank(a) - statusRank(b) || compareText(a, b);
}

/** The failure statuses that occurred in any model's row, in the failure table's order. */
export function failureStatuses(models: readonly Pick<ModelSummary, 'failures'>[]): string[] {
  return [...new Set(models.flatMap((m) => Object.keys(m.failures)))].sort(compareStatuses);
}

/** Code-unit order, as `sort` without a locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `record[key]` for a key read from the log: only the record's own entries count. */
export function ownCount(record: Readonly<Record<string, number>>, key: string): number {
  return Object.hasOwn(record, key) ? (record[key] ?? 0) : 0;
}

/** Epoch milliseconds as an ISO time, or null when not a time (NaN, ±Infinity). */
export function isoOrNull(ms: number): string | null {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

/** `12,345`. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `76.7%`. */
export function pct(value: number): string {
  return `${value.toFixed(1)}%`;
}

/** `2025-11-22T10:15:30.123Z` -> `2025-11-22 10:15:30`; `-` for none. */
export function time(iso: string | null): string {
  if (iso === null) return '-';
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
}

/** `13:00:30 - 13:13:30` (times only when both are on one day), or `2025-11-21 23:50:00 - 2025-11-22 00:10:00`. */
export function span(firstIso: string | null, lastIso: string | null): string {
  if (firstIso === null || lastIso === null) return '-';
  const a = time(firstIso);
  const b = time(lastIso);
  return a.slice(0, 10) === b.slice(0, 10) ? `${a.slice(11)} - ${b.slice(11)}` : `${a} - ${b}`;
}

/** Milliseconds for people: `850ms`, `4.21s`, `2m05s`, `1h02m`. */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 10) return `${Math.round(ms * 10) / 10}ms`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)}s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  if (totalSeconds < 3600) return `${Math.floor(totalSeconds / 60)}m${String(totalSeconds % 60).padStart(2, '0')}s`;
  const totalMinutes = Math.round(ms / 60_000);
  return `${Math.floor(totalMinutes / 60)}h${String(totalMinutes % 60).padStart(2, '0')}m`;
}

/** At most `max` characters, the end replaced by `...` when cut. */
export function cutText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(1, max - 3))}...` : text;
}

/** One line (runs of white space become one space) of at most `width` characters. */
export function cutLine(text: string, width: number): string {
  return cutText(text.replace(/\s+/g, ' ').trim(), width);
}

/** The filters a summary was made with, one phrase each (`since 2025-11-22 10:00:00 UTC`, `model m`...). */
export function filterPhrases(filters: SummaryFiltersView, statusSeparator: string): string[] {
  return [
    filters.since !== null ? `since ${time(filters.since)} UTC` : null,
    filters.model !== null ? `model ${filters.model}` : null,
    filters.task !== null ? `task ${filters.task}` : null,
    filters.status !== null ? `status ${filters.status.join(statusSeparator)}` : null,
  ].filter((part) => part !== null);
}
