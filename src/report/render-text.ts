import { compareStatuses, ownCount } from './summary.js';
import type { CompactRunsSummary, RunsSummary } from './summary-schema.js';

/** What the text report needs: a full summary or the tool's compact one. */
export type SummaryView = Omit<RunsSummary, 'timeline' | 'duration_buckets_ms'> &
  Partial<Pick<CompactRunsSummary, 'models_omitted' | 'escalated_tasks_omitted'>>;

/** Options of {@link renderReportText}. */
export interface RenderTextOptions {
  /** ANSI colours (bold headings, failures in red, escalations in yellow). @default false */
  readonly color?: boolean;
  /** Error texts are cut to this many characters (and always to the width). @default the width less 10 */
  readonly errorWidth?: number;
  /**
   * No line is longer than this (tables too wide are split, repeating their first column; long
   * names and texts are cut with `...`). The command passes `COLUMNS` when set. At least 60.
   * @default 100
   */
  readonly width?: number;
  /** Rows listed in the attention and escalated tasks tables. @default 10 */
  readonly maxTasks?: number;
}

/** The text report's default width: fits 100 columns, readable in 80. */
export const DEFAULT_TEXT_WIDTH = 100;
const MIN_WIDTH = 60;
/** The first column (model names, task ids) is cut to this share of the width. */
const KEY_SHARE = 0.4;

type Style = 'bold' | 'red' | 'yellow' | 'green' | 'dim';
const ANSI: Record<Style, string> = { bold: '1', red: '31', yellow: '33', green: '32', dim: '2' };

interface Cell {
  readonly text: string;
  readonly style?: Style | undefined;
}

interface Column {
  readonly header: string;
  readonly right?: boolean;
  /** Free text (an error): takes what width is left, cut to fit. */
  readonly fill?: boolean;
}

type Paint = (cell: Cell) => string;

/**
 * The terminal report, in the order a reviewer needs it: a header (runs, range, files, filters,
 * skipped lines), **Needs attention now** (open circuits, tasks escalated and not resolved),
 * escalations grouped by cause, then per model the outcomes, the latency of answers and the time
 * lost to failures, the tokens, and the fallback chains and busy retries. Plain text unless `color`
 * is set; no line longer than `width`. Ends with a newline.
 */
export function renderReportText(summary: SummaryView, options: RenderTextOptions = {}): string {
  const width = Math.max(MIN_WIDTH, Math.floor(options.width ?? DEFAULT_TEXT_WIDTH));
  const paint: Paint = (cell) =>
    options.color === true && cell.style !== undefined ? `\u001b[${ANSI[cell.style]}m${cell.text}\u001b[0m` : cell.text;
  const errorWidth = Math.min(options.errorWidth ?? width - 10, width - 10);
  const maxTasks = options.maxTasks ?? 10;
  const lines: string[] = [];
  /** A sentence: wrapped at the width, continuation lines indented two more spaces. */
  const say = (text: string, style?: Style): void => {
    for (const line of wrap(clean(text), width)) lines.push(paint({ text: line, style }));
  };
  const heading = (text: string): void => {
    lines.push('', paint({ text: cut(text, width), style: 'bold' }));
  };
  const put = (columns: readonly Column[], rows: readonly (readonly Cell[])[]): void => {
    lines.push(...fitTable(columns, rows, width, paint));
  };

  const okPct = summary.total_runs > 0 ? ` (${pct((summary.total_ok / summary.total_runs) * 100)})` : '';
  say(
    `Runs: ${count(summary.total_runs)}, ok ${count(summary.total_ok)}${okPct}, escalations ${count(summary.total_escalations)}`,
    'bold',
  );
  const busy = summary.chains.busy_retries;
  const fell = summary.models.reduce((sum, m) => sum + m.absorbed.fell_through, 0);
  if (busy > 0 || fell > 0)
    say(
      `Absorbed by the server (not seen by callers): ${count(busy)} busy retr${busy === 1 ? 'y' : 'ies'}, ${count(fell)} chain fall-through(s)`,
    );
  const { first_ts: first, last_ts: last } = summary.range;
  say(`Range: ${first === null ? '-' : `${time(first)} to ${time(last)} UTC`}`);
  if (summary.dirs.length > 1) say(`Dirs: ${summary.dirs.join(', ')}`);
  say(`Files: ${summary.files.length === 0 ? '(no run log found)' : summary.files.join(', ')}`);
  const filters = [
    summary.filters.since !== null ? `since ${time(summary.filters.since)} UTC` : null,
    summary.filters.model !== null ? `model ${summary.filters.model}` : null,
    summary.filters.task !== null ? `task ${summary.filters.task}` : null,
    summary.filters.status !== null ? `status ${summary.filters.status.join(',')}` : null,
  ].filter((part) => part !== null);
  if (filters.length > 0) say(`Filters: ${filters.join(', ')}`);
  const skippedNote = [
    `Skipped lines: ${count(summary.skipped_lines)} (torn or unreadable)`,
    summary.blank_lines > 0 ? `${count(summary.blank_lines)} blank` : null,
    summary.unrecognized_records > 0 ? `${count(summary.unrecognized_records)} JSON object(s) that are not runs` : null,
  ].filter((part) => part !== null);
  say(skippedNote.join(', '), summary.skipped_lines > 0 ? 'yellow' : undefined);

  // ------------------------------------------------------------------ needs attention now
  const attention = summary.attention;
  if (attention.circuits_open.length === 0 && attention.tasks_total === 0) {
    heading('Needs attention now: nothing (no open circuit, no unresolved escalated task)');
  } else {
    heading('Needs attention now');
    for (const c of attention.circuits_open) {
      const retry =
        c.retry_at === null
          ? ''
          : Date.parse(c.retry_at) <= Date.parse(summary.generated_at)
            ? `, cooldown over at ${time(c.retry_at)} (the next run probes it)`
            : `, retry at ${time(c.retry_at)}`;
      say(
        `Circuit ${c.state === 'half_open' ? 'half-open' : 'open'}: ${c.model}${c.since === null ? '' : ` since ${time(c.since)}`}, ${count(c.consecutive_failures)} failure(s) in a row${retry}`,
        'red',
      );
      if (c.last_error !== null) say(`  last error: ${cut(c.last_error, errorWidth)}`, 'dim');
    }
    if (attention.tasks_total > 0) {
      say(
        `Tasks escalated, not reset nor answered since: ${count(attention.tasks_total)}${attention.blocked_tasks > 0 ? ` (${count(attention.blocked_tasks)} blocked)` : ''}; ollama_reset clears one`,
        'yellow',
      );
      put(
        [
          { header: 'task_id' },
          { header: 'model' },
          { header: 'reason' },
          { header: 'escalated (UTC)' },
          { header: 'blocked', right: true },
        ],
        attention.tasks
          .slice(0, maxTasks)
          .map((t) => [
            { text: t.task_id },
            { text: t.model },
            { text: t.reason ?? t.status, style: 'yellow' },
            { text: t.escalated_at === null ? '-' : time(t.escalated_at) },
            { text: count(t.blocked), style: t.blocked > 0 ? 'red' : undefined },
          ]),
      );
      const more = attention.tasks_total - Math.min(maxTasks, attention.tasks.length);
      if (more > 0) say(`${count(more)} more: report --json lists them (attention.tasks).`, 'dim');
    }
  }

  if (summary.models.length === 0) {
    lines.push('', summary.total_runs === 0 ? 'No runs match.' : 'No model rows.');
    return `${lines.join('\n')}\n`;
  }

  // ------------------------------------------------------------------ escalations by cause
  const causes = summary.escalation_causes;
  if (causes.length === 0) heading('Escalations: none');
  else {
    const refusals = summary.models.reduce((sum, m) => sum + ownCount(m.failures, 'blocked'), 0);
    const grouped = summary.total_escalations - refusals;
    heading(
      `Escalations by cause (${count(causes.length)} cause(s), ${count(grouped)} escalation(s)${refusals > 0 ? `; ${count(refusals)} blocked refusal(s) not counted` : ''})`,
    );
    const rows = causes.map((c) => [
      { text: count(c.escalations), style: 'yellow' as const },
      { text: count(c.tasks) },
      { text: c.model },
      { text: c.reason ?? '-' },
      { text: c.status, style: 'red' as const },
      { text: span(c.first_ts, c.last_ts) },
    ]);
    const table = fitTable(
      [
        { header: 'count', right: true },
        { header: 'tasks', right: true },
        { header: 'model' },
        { header: 'reason' },
        { header: 'status' },
        { header: 'first - last (UTC)' },
      ],
      rows,
      width,
      paint,
    );
    // Under each cause: its example tasks and its error text.
    if (table.length === causes.length + 1) {
      lines.push(table[0]!);
      causes.forEach((c, i) => {
        lines.push(table[i + 1]!);
        if (c.example_tasks.length > 0) say(`  e.g. ${c.example_tasks.join(', ')}`, 'dim');
        if (c.error !== null) say(`  error: ${cut(c.error, errorWidth)}`, 'dim');
      });
    } else lines.push(...table);
    if (summary.escalation_causes_truncated) say('More than 200 causes: the rest are not listed.');
    if (summary.escalations_without_task > 0) say(`${count(summary.escalations_without_task)} escalation(s) without a task_id.`);
  }

  // ------------------------------------------------------------------ models: outcomes
  const failureKinds: string[] = [];
  for (const m of summary.models)
    for (const kind of Object.keys(m.failures)) if (kind !== 'timeout' && !failureKinds.includes(kind)) failureKinds.push(kind);
  failureKinds.sort(compareStatuses);
  heading('Outcomes per model (what callers saw)');
  put(
    [
      { header: 'model' },
      { header: 'runs', right: true },
      { header: 'ok %', right: true },
      { header: 'timeouts', right: true },
      ...failureKinds.map((kind) => ({ header: kind, right: true })),
      { header: 'escalations', right: true },
      { header: 'circuit openings', right: true },
    ],
    summary.models.map((m) => [
      { text: m.model },
      { text: count(m.runs) },
      { text: pct(m.ok_pct), style: m.ok_pct >= 95 ? 'green' : m.ok_pct >= 80 ? 'yellow' : 'red' },
      failureCell(m.timeouts),
      ...failureKinds.map((kind) => failureCell(ownCount(m.failures, kind))),
      { text: count(m.escalations), style: m.escalations > 0 ? 'yellow' : undefined },
      { text: count(m.circuit_openings), style: m.circuit_openings > 0 ? 'yellow' : undefined },
    ]),
  );
  if (summary.models_truncated) say(`Too many models: past the first 500, runs are counted under "(other)".`);
  if ((summary.models_omitted ?? 0) > 0) say(`${count(summary.models_omitted ?? 0)} more model(s) with fewer runs not shown.`);

  // ------------------------------------------------------------------ latency and time lost
  heading('Latency of answers, and time lost to failures');
  put(
    [
      { header: 'model' },
      { header: 'answers', right: true },
      { header: 'p50', right: true },
      { header: 'p95', right: true },
      { header: 'max', right: true },
      { header: 'queue p50', right: true },
      { header: 'failed attempts', right: true },
      { header: 'time lost', right: true },
    ],
    summary.models.map((m) => [
      { text: m.model },
      { text: count(m.ok) },
      { text: duration(m.ok_duration_ms.p50) },
      { text: duration(m.ok_duration_ms.p95) },
      { text: duration(m.ok_duration_ms.max) },
      { text: duration(m.queue_ms.p50) },
      failureCell(m.lost_attempts),
      { text: m.lost_attempts === 0 ? '-' : duration(m.lost_ms), style: m.lost_ms > 0 ? 'red' : undefined },
    ]),
  );
  say('p50/p95/max: spawn to exit of runs that answered (ok), within 1%; time lost: failed attempts that ran.', 'dim');

  // ------------------------------------------------------------------ tokens
  const tokenRows = summary.models.filter((m) => m.tokens.runs > 0 || m.tokens.may_be_truncated > 0);
  if (tokenRows.length > 0) {
    heading('Tokens per model');
    put(
      [
        { header: 'model' },
        { header: 'runs', right: true },
        { header: 'out tok/s', right: true },
        { header: 'prompt p95', right: true },
        { header: 'tokens in', right: true },
        { header: 'tokens out', right: true },
        { header: 'cold loads', right: true },
        { header: 'truncated?', right: true },
      ],
      tokenRows.map((m) => [
        { text: m.model },
        { text: count(m.tokens.runs) },
        { text: m.tokens.output_tps_p50 === null ? '-' : m.tokens.output_tps_p50.toFixed(1) },
        { text: m.tokens.prompt_tokens_p95 === null ? '-' : count(m.tokens.prompt_tokens_p95) },
        { text: count(m.tokens.prompt_tokens) },
        { text: count(m.tokens.output_tokens) },
        { text: count(m.tokens.cold_loads) },
        { text: count(m.tokens.may_be_truncated), style: m.tokens.may_be_truncated > 0 ? 'red' : undefined },
      ]),
    );
    say(
      'out tok/s: median output tokens per second; prompt p95: prompt tokens; cold load: load_ms over 1 s (the model was loaded first); truncated?: runs warned prompt_may_be_truncated (raise num_ctx).',
      'dim',
    );
  }

  // ------------------------------------------------------------------ chains and busy retries
  const chains = summary.chains;
  if (chains.calls > 0 || chains.busy_retries > 0 || chains.busy_gave_up > 0) {
    heading('Fallback chains and busy retries');
    if (chains.calls > 0) {
      put(
        [
          { header: 'first model' },
          { header: 'calls', right: true },
          { header: 'fell through', right: true },
          { header: 'to (calls, ok)', fill: true },
        ],
        chains.rows.map((row) => [
          { text: row.first_model },
          { text: count(row.calls) },
          {
            text: `${count(row.fell_through)} (${pct((row.fell_through / Math.max(1, row.calls)) * 100)})`,
            style: row.fell_through > 0 ? 'yellow' : undefined,
          },
          {
            text: row.to.length === 0 ? '-' : row.to.map((to) => `${to.model} ${count(to.calls)}, ${count(to.ok)} ok`).join('; '),
          },
        ]),
      );
    }
    say(
      `Busy retries absorbed: ${count(chains.busy_retries)} (server_busy / rate_limited tried again by the server; not failures callers saw)${chains.busy_gave_up > 0 ? `; ${count(chains.busy_gave_up)} call(s) still ended busy` : ''}.`,
    );
  }

  // ------------------------------------------------------------------ escalated tasks (compact view only lists a few)
  const more: string[] = [];
  if ((summary.escalated_tasks_omitted ?? 0) > 0)
    more.push(`${count(summary.escalated_tasks_omitted ?? 0)} more escalated task(s) not shown`);
  if (summary.escalated_tasks_truncated) more.push('only the 1000 most recently active escalated tasks were kept');
  if (summary.escalated_tasks.length > 0)
    say(`${count(summary.escalated_tasks.length)} escalated task(s) in all: report --json lists each (escalated_tasks).`, 'dim');
  if (more.length > 0) say(`${more.join('; ')}.`);
  return `${lines.join('\n')}\n`;
}

function failureCell(n: number): Cell {
  return { text: count(n), style: n > 0 ? 'red' : undefined };
}

/**
 * A table no wider than `width`: the first column (the key) is cut to 40% of the width when
 * longer; when the other columns do not fit beside it they go into several tables, each repeating
 * the key; a `fill` column (free text) takes what is left and is cut to it.
 */
function fitTable(columns: readonly Column[], rawRows: readonly (readonly Cell[])[], width: number, paint: Paint): string[] {
  const keyMax = Math.max(12, Math.floor(width * KEY_SHARE));
  // Names, task ids and errors come from the log: never let them move the cursor or recolour the terminal.
  const rows = rawRows.map((row) =>
    row.map((cell, c) => ({ ...cell, text: c === 0 ? cut(clean(cell.text), keyMax) : clean(cell.text) })),
  );
  const natural = columns.map((column, c) => Math.max(column.header.length, ...rows.map((row) => row[c]?.text.length ?? 0)));
  const groups: number[][] = [];
  let group: number[] = [];
  let used = natural[0]!;
  for (let c = 1; c < columns.length; c++) {
    const need = 2 + (columns[c]!.fill === true ? Math.min(natural[c]!, 20) : natural[c]!);
    if (group.length > 0 && used + need > width) {
      groups.push(group);
      group = [];
      used = natural[0]!;
    }
    group.push(c);
    used += need;
  }
  if (group.length > 0 || columns.length === 1) groups.push(group);
  const out: string[] = [];
  groups.forEach((cols, g) => {
    if (g > 0) out.push('');
    const shown = [0, ...cols];
    const widths = shown.map((c) => natural[c]!);
    const fixed = widths.reduce((sum, w) => sum + w, 0) + 2 * (shown.length - 1);
    const last = shown.length - 1;
    if (fixed > width) widths[last] = Math.max(columns[shown[last]!]!.header.length, widths[last]! - (fixed - width));
    const render = (cells: readonly Cell[]): string =>
      shown
        .map((c, i) => {
          const column = columns[c]!;
          const text = cut(cells[c]?.text ?? '', widths[i]!);
          const padded = column.right === true ? text.padStart(widths[i]!) : i === last ? text : text.padEnd(widths[i]!);
          return paint({ text: padded, style: cells[c]?.style });
        })
        .join('  ');
    out.push(render(columns.map((column) => ({ text: column.header, style: 'bold' }))));
    for (const row of rows) out.push(render(row));
  });
  return out;
}

function clean(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
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

/** `13:00:30 - 13:13:30` (times only when both are on one day), or `2025-11-21 23:50:00 - 2025-11-22 00:10:00`. */
function span(firstIso: string | null, lastIso: string | null): string {
  if (firstIso === null || lastIso === null) return '-';
  const a = time(firstIso);
  const b = time(lastIso);
  return a.slice(0, 10) === b.slice(0, 10) ? `${a.slice(11)} - ${b.slice(11)}` : `${a} - ${b}`;
}

/** Words of `text` in lines of at most `width` (a longer word is cut); continuation lines indented two more spaces. */
function wrap(text: string, width: number): string[] {
  const indent = /^ */.exec(text)![0];
  const words = text.trim().split(/\s+/);
  const out: string[] = [];
  let line = indent;
  for (const word of words) {
    const room = width - line.length - (line.trim() === '' ? 0 : 1);
    if (line.trim() !== '' && word.length > room) {
      out.push(line);
      line = `${indent}  `;
    }
    const sep = line.trim() === '' ? '' : ' ';
    line += sep + cut(word, width - line.length - sep.length);
  }
  out.push(line);
  return out;
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
