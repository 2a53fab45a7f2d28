import { compareStatuses, ownCount } from './summary.js';
import type { CompactRunsSummary, RunsSummary } from './summary-schema.js';

/** What the text report needs: a full summary or the tool's compact one. */
export type SummaryView = Omit<RunsSummary, 'timeline' | 'duration_buckets_ms'> &
  Partial<Pick<CompactRunsSummary, 'models_omitted' | 'escalated_tasks_omitted'>>;

/** Options of {@link renderReportText}. */
export interface RenderTextOptions {
  /** ANSI colours (bold headings, failures in red, escalations in yellow). @default false */
  readonly color?: boolean;
  /** Error texts in the escalated tasks table are cut to this many characters. @default 60 */
  readonly errorWidth?: number;
}

type Style = 'bold' | 'red' | 'yellow' | 'green' | 'dim';
const ANSI: Record<Style, string> = { bold: '1', red: '31', yellow: '33', green: '32', dim: '2' };

interface Cell {
  readonly text: string;
  readonly style?: Style | undefined;
}

interface Column {
  readonly header: string;
  readonly right?: boolean;
}

/**
 * The terminal report: a header (runs, range, files, filters, skipped lines), a table per model
 * (runs, ok %, timeouts, one column per other failure status that occurred, escalations, circuit
 * openings, duration p50/p95/max, queue p50) and a table of escalated tasks, most recent first.
 * Plain text unless `color` is set. Ends with a newline.
 */
export function renderReportText(summary: SummaryView, options: RenderTextOptions = {}): string {
  const paint = (cell: Cell): string =>
    options.color === true && cell.style !== undefined ? `\u001b[${ANSI[cell.style]}m${cell.text}\u001b[0m` : cell.text;
  const lines: string[] = [];

  const okPct = summary.total_runs > 0 ? ` (${pct((summary.total_ok / summary.total_runs) * 100)})` : '';
  lines.push(
    paint({
      text: `Runs: ${count(summary.total_runs)}, ok ${count(summary.total_ok)}${okPct}, escalations ${count(summary.total_escalations)}`,
      style: 'bold',
    }),
  );
  const { first_ts: first, last_ts: last } = summary.range;
  lines.push(`Range: ${first === null ? '-' : `${time(first)} to ${time(last)} UTC`}`);
  lines.push(`Files: ${summary.files.length === 0 ? '(no run log found)' : summary.files.join(', ')}`);
  const filters = [
    summary.filters.since !== null ? `since ${time(summary.filters.since)} UTC` : null,
    summary.filters.model !== null ? `model ${summary.filters.model}` : null,
    summary.filters.task !== null ? `task ${summary.filters.task}` : null,
    summary.filters.status !== null ? `status ${summary.filters.status.join(',')}` : null,
  ].filter((part) => part !== null);
  if (filters.length > 0) lines.push(`Filters: ${filters.join(', ')}`);
  const skippedNote = [
    `Skipped lines: ${count(summary.skipped_lines)} (torn or unreadable)`,
    summary.blank_lines > 0 ? `${count(summary.blank_lines)} blank` : null,
    summary.unrecognized_records > 0 ? `${count(summary.unrecognized_records)} JSON object(s) that are not runs` : null,
  ].filter((part) => part !== null);
  lines.push(paint({ text: skippedNote.join(', '), style: summary.skipped_lines > 0 ? 'yellow' : undefined }));

  if (summary.models.length === 0) {
    lines.push('', summary.total_runs === 0 ? 'No runs match.' : 'No model rows.');
    return `${lines.join('\n')}\n`;
  }

  // ------------------------------------------------------------------ models
  const failureKinds: string[] = [];
  for (const m of summary.models)
    for (const kind of Object.keys(m.failures)) if (kind !== 'timeout' && !failureKinds.includes(kind)) failureKinds.push(kind);
  failureKinds.sort(compareStatuses);
  const modelColumns: Column[] = [
    { header: 'model' },
    { header: 'runs', right: true },
    { header: 'ok %', right: true },
    { header: 'timeouts', right: true },
    ...failureKinds.map((kind) => ({ header: kind, right: true })),
    { header: 'escalations', right: true },
    { header: 'circuit openings', right: true },
    { header: 'p50', right: true },
    { header: 'p95', right: true },
    { header: 'max', right: true },
    { header: 'queue p50', right: true },
  ];
  const modelRows: Cell[][] = summary.models.map((m) => [
    { text: m.model },
    { text: count(m.runs) },
    { text: pct(m.ok_pct), style: m.ok_pct >= 95 ? 'green' : m.ok_pct >= 80 ? 'yellow' : 'red' },
    failureCell(m.timeouts),
    ...failureKinds.map((kind) => failureCell(ownCount(m.failures, kind))),
    { text: count(m.escalations), style: m.escalations > 0 ? 'yellow' : undefined },
    { text: count(m.circuit_openings), style: m.circuit_openings > 0 ? 'yellow' : undefined },
    { text: duration(m.duration_ms.p50) },
    { text: duration(m.duration_ms.p95) },
    { text: duration(m.duration_ms.max) },
    { text: duration(m.queue_ms.p50) },
  ]);
  lines.push('', paint({ text: 'Models', style: 'bold' }));
  lines.push(...table(modelColumns, modelRows, paint));
  lines.push(
    paint({ text: 'Durations: spawned runs only (p50/p95 within 1%); queue p50: time waiting for a slot.', style: 'dim' }),
  );
  if (summary.models_truncated) lines.push(`Too many models: past the first 500, runs are counted under "(other)".`);
  if ((summary.models_omitted ?? 0) > 0)
    lines.push(`${count(summary.models_omitted ?? 0)} more model(s) with fewer runs not shown.`);

  // ------------------------------------------------------------------ escalated tasks
  lines.push('');
  if (summary.escalated_tasks.length === 0) {
    lines.push(paint({ text: 'Escalated tasks: none', style: 'bold' }));
  } else {
    lines.push(paint({ text: `Escalated tasks (${count(summary.escalated_tasks.length)}, most recent first)`, style: 'bold' }));
    const width = options.errorWidth ?? 60;
    lines.push(
      ...table(
        [
          { header: 'task_id' },
          { header: 'model' },
          { header: 'attempts', right: true },
          { header: 'last status' },
          { header: 'reason' },
          { header: 'last ts (UTC)' },
          { header: 'last error' },
        ],
        summary.escalated_tasks.map((t) => [
          { text: t.task_id },
          { text: t.model },
          { text: count(t.attempts) },
          { text: t.last_status, style: t.last_status === 'ok' ? 'green' : 'red' },
          { text: t.escalation_reason ?? '-', style: 'yellow' },
          { text: t.last_ts === null ? '-' : time(t.last_ts) },
          { text: t.last_error === null ? '-' : cut(t.last_error, width) },
        ]),
        paint,
      ),
    );
  }
  const more: string[] = [];
  if ((summary.escalated_tasks_omitted ?? 0) > 0)
    more.push(`${count(summary.escalated_tasks_omitted ?? 0)} more escalated task(s) not shown`);
  if (summary.escalated_tasks_truncated) more.push('only the 1000 most recently active escalated tasks were kept');
  if (summary.escalations_without_task > 0)
    more.push(`${count(summary.escalations_without_task)} escalation(s) without a task_id`);
  if (more.length > 0) lines.push(`${more.join('; ')}.`);
  return `${lines.join('\n')}\n`;
}

function failureCell(n: number): Cell {
  return { text: count(n), style: n > 0 ? 'red' : undefined };
}

function table(columns: readonly Column[], rawRows: readonly (readonly Cell[])[], paint: (cell: Cell) => string): string[] {
  // Model names, task ids and error texts come from the log: never let them move the cursor or recolour the terminal.
  const rows = rawRows.map((row) =>
    row.map((cell) => ({ ...cell, text: cell.text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?') })),
  );
  const widths = columns.map((column, c) => Math.max(column.header.length, ...rows.map((row) => row[c]?.text.length ?? 0)));
  const last = columns.length - 1;
  const pad = (text: string, c: number): string =>
    columns[c]?.right === true ? text.padStart(widths[c]!) : c === last ? text : text.padEnd(widths[c]!);
  const render = (cells: readonly Cell[]): string =>
    cells.map((cell, c) => paint({ text: pad(cell.text, c), style: cell.style })).join('  ');
  return [render(columns.map((column) => ({ text: column.header, style: 'bold' }))), ...rows.map(render)];
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function pct(value: number): string {
  return `${value.toFixed(1)}%`;
}

/** `2025-11-22T10:15:30.123Z` -> `2025-11-22 10:15:30`. */
function time(iso: string | null): string {
  if (iso === null) return '-';
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
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

function cut(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > width ? `${line.slice(0, Math.max(1, width - 3))}...` : line;
}
