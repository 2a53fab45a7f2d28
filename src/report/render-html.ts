import { createHash } from 'node:crypto';

import type { RunStatus } from '../policy/run-status.js';
import { REPORT_CLIENT_SCRIPT } from './html-client.js';
import { duration } from './render-text.js';
import { compareStatuses, ownCount } from './summary.js';
import type { RunsSummary } from './summary-schema.js';

/** Options of {@link renderReportHtml}. */
export interface RenderHtmlOptions {
  /**
   * Source of Chart.js's UMD build (it defines the global `Chart`), inlined in the page so that it
   * opens with no network: `loadChartLibrary()` reads the installed one.
   */
  readonly chartLibrary: string;
  /** Escalated tasks listed, most recent first; the others are counted in a note. @default 200 */
  readonly maxEscalatedTasks?: number;
  /** Models in the outcomes chart (most runs first). @default 25 */
  readonly maxOutcomeModels?: number;
  /** Models in the latency chart (most runs first, spawned ones only). @default 8 */
  readonly maxLatencyModels?: number;
  /** Models listed in each table (most runs first); the embedded summary keeps them all. @default 100 */
  readonly maxTableModels?: number;
}

/** Error texts longer than this are cut in the page (the log's own are at most 500 characters). */
const ERROR_CHARS = 500;

/**
 * One colour per run status, the same in every chart and table of the report. Statuses outside the
 * list (a newer server's) take {@link EXTRA_COLORS} in order of appearance.
 */
export const STATUS_COLORS: Readonly<Record<RunStatus, string>> = {
  ok: '#2e7d32',
  timeout: '#ef6c00',
  model_not_found: '#6d4c41',
  ollama_unreachable: '#546e7a',
  server_busy: '#fbc02d',
  pull_failed: '#a1887f',
  signin_required: '#26c6da',
  cloud_access_denied: '#00acc1',
  rate_limited: '#f9a825',
  prompt_too_long: '#5e35b1',
  model_unsupported: '#4e342e',
  input_file_error: '#00695c',
  empty_output: '#9e9d24',
  output_limit: '#8e24aa',
  crashed: '#c62828',
  cli_not_found: '#263238',
  circuit_open: '#ec407a',
  unsupported_option: '#1e88e5',
  cancelled: '#9e9e9e',
  blocked: '#283593',
  not_started: '#bcaaa4',
  invalid_input: '#00897b',
};
const EXTRA_COLORS = ['#7cb342', '#5c6bc0', '#ffa726', '#8d6e63', '#26a69a', '#ab47bc', '#78909c', '#d4e157'];
/** Models in the latency chart (Tableau 10, without its grey). */
const MODEL_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
const TIMELINE_COLORS = {
  ok: STATUS_COLORS.ok,
  failed: '#e57373',
  escalation: '#ffb300',
  escalation_border: '#6d4c00',
  circuit_opening: '#4527a0',
};

/** One series of a chart: a status (outcomes) or a model (latency). */
export interface ChartSeries {
  readonly key: string;
  readonly label: string;
  readonly color: string;
  readonly data: readonly number[];
}

/** What the page's charts draw, computed from the summary (`null`: nothing to draw, a note instead). */
export interface ReportCharts {
  /** Stacked bars: one bar per model (`labels`), one series per status that occurred (ok first). */
  readonly outcomes: {
    readonly labels: readonly string[];
    readonly series: readonly ChartSeries[];
    readonly models_total: number;
  } | null;
  /** Grouped bars: one group per duration bucket (`labels`), one series per model that spawned a run. */
  readonly latency: {
    readonly labels: readonly string[];
    /** The bucket's range in words (`250 ms to 500 ms`), for tooltips. */
    readonly ranges: readonly string[];
    readonly series: readonly ChartSeries[];
    readonly models_total: number;
  } | null;
  /** Stacked bars of ok and failed runs per bucket, and one marker per event at its exact time. */
  readonly timeline: {
    readonly bucket: string;
    readonly bucket_ms: number;
    readonly starts_ms: readonly number[];
    readonly ok: readonly number[];
    readonly failed: readonly number[];
    readonly events: readonly {
      readonly ts_ms: number;
      readonly kind: 'escalation' | 'circuit_opening';
      readonly model: string;
      readonly task_id: string | null;
      readonly detail: string | null;
    }[];
    /** The x axis: from the first bucket's start to the last one's end, ticks at `ticks_ms` (every `step_ms`, aligned to UTC). */
    readonly min_ms: number;
    readonly max_ms: number;
    readonly step_ms: number;
    readonly ticks_ms: readonly number[];
    readonly tick_style: 'time' | 'day-time' | 'date';
    readonly axis_title: string;
    readonly y_title: string;
    readonly colors: typeof TIMELINE_COLORS;
  } | null;
}

/**
 * The data of the report's charts. Pure. Statuses are in the README's order with `ok` first and
 * keep their colour everywhere; charts show at most `maxOutcomeModels` / `maxLatencyModels` models
 * (most runs first).
 */
export function buildReportCharts(summary: RunsSummary, options: Omit<RenderHtmlOptions, 'chartLibrary'> = {}): ReportCharts {
  if (summary.total_runs === 0 || summary.models.length === 0) return { outcomes: null, latency: null, timeline: null };
  const colorOf = statusColors(summary);

  const outcomeModels = summary.models.slice(0, options.maxOutcomeModels ?? 25);
  const statuses = failureStatuses(summary);
  const anyOk = summary.models.some((m) => m.ok > 0);
  const outcomeSeries: ChartSeries[] = [
    ...(anyOk ? [{ key: 'ok', label: 'ok', color: colorOf('ok'), data: outcomeModels.map((m) => m.ok) }] : []),
    ...statuses.map((status) => ({
      key: status,
      label: status,
      color: colorOf(status),
      data: outcomeModels.map((m) => ownCount(m.failures, status)),
    })),
  ];

  const spawnedModels = summary.models.filter((m) => m.spawned > 0);
  const bounds = summary.duration_buckets_ms;
  const latency =
    spawnedModels.length === 0
      ? null
      : {
          labels: [...bounds.map((b) => `\u2264${shortDuration(b)}`), `>${shortDuration(bounds[bounds.length - 1] ?? 0)}`],
          ranges: [
            ...bounds.map((b, i) =>
              i === 0 ? `up to ${shortDuration(b)}` : `over ${shortDuration(bounds[i - 1]!)}, up to ${shortDuration(b)}`,
            ),
            `over ${shortDuration(bounds[bounds.length - 1] ?? 0)}`,
          ],
          series: spawnedModels.slice(0, options.maxLatencyModels ?? 8).map((m, i) => ({
            key: m.model,
            label: m.model,
            color: MODEL_COLORS[i % MODEL_COLORS.length]!,
            data: m.duration_histogram,
          })),
          models_total: spawnedModels.length,
        };

  const { timeline } = summary;
  let timelineChart: ReportCharts['timeline'] = null;
  if (timeline.buckets.length > 0) {
    const bucketMs = timeline.bucket_seconds * 1000;
    const starts = timeline.buckets.map((b) => Date.parse(b.start));
    const min = starts[0]!;
    const max = starts[starts.length - 1]! + bucketMs;
    const step = tickStep(max - min, bucketMs);
    const firstDay = new Date(min).toISOString().slice(0, 10);
    const lastDay = new Date(max - 1).toISOString().slice(0, 10);
    const tickStyle = step >= DAY_MS ? 'date' : firstDay === lastDay ? 'time' : 'day-time';
    timelineChart = {
      bucket: timeline.bucket,
      bucket_ms: bucketMs,
      starts_ms: starts,
      ok: timeline.buckets.map((b) => b.runs - b.failures),
      failed: timeline.buckets.map((b) => b.failures),
      events: timeline.events.map((e) => ({
        ts_ms: Date.parse(e.ts),
        kind: e.kind,
        model: e.model,
        task_id: e.task_id,
        detail: e.detail,
      })),
      min_ms: min,
      max_ms: max,
      step_ms: step,
      ticks_ms: Array.from(
        { length: Math.floor(max / step) - Math.ceil(min / step) + 1 },
        (_, i) => (Math.ceil(min / step) + i) * step,
      ),
      tick_style: tickStyle,
      axis_title: `time (UTC${tickStyle === 'time' ? `, ${firstDay}` : ''}); one bar per ${bucketWords(timeline.bucket)}`,
      y_title: `runs per ${bucketWords(timeline.bucket)} (count)`,
      colors: TIMELINE_COLORS,
    };
  }
  return {
    outcomes: { labels: outcomeModels.map((m) => m.model), series: outcomeSeries, models_total: summary.models.length },
    latency,
    timeline: timelineChart,
  };
}

/**
 * The report as one self-contained HTML page: a header (time range, files read, runs, skipped
 * lines, filters), then the outcomes per model (stacked bars and a table), the latency per model
 * (duration histogram and a p50/p95/max table), runs and failures over time with escalations and
 * circuit openings marked, and the escalated tasks. Chart.js is inlined and a Content-Security-Policy
 * forbids every network request, so the page opens offline and cannot call out. The summary is
 * embedded as JSON (`<script type="application/json" id="report-summary">`; its `escalated_tasks`
 * cut to the rows shown, errors to 500 characters); every text from the log is escaped. With no
 * runs the page says so and draws no chart. Pure: same summary and options, same page.
 */
export function renderReportHtml(summary: RunsSummary, options: RenderHtmlOptions): string {
  const maxTasks = options.maxEscalatedTasks ?? 200;
  const tasks = summary.escalated_tasks
    .slice(0, maxTasks)
    .map((t) => ({ ...t, last_error: t.last_error === null ? null : cutText(t.last_error, ERROR_CHARS) }));
  const tasksOmitted = summary.escalated_tasks.length - tasks.length;
  const charts = buildReportCharts(summary, options);
  const colorOf = statusColors(summary);

  const embeddedSummary: RunsSummary = { ...summary, escalated_tasks: tasks };
  const library = options.chartLibrary.replace(/<\/(script)/gi, '<\\/$1');
  const client = REPORT_CLIENT_SCRIPT;
  const csp = [
    "default-src 'none'",
    `script-src ${[library, client].map((s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`).join(' ')}`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');

  const body: string[] = [];
  body.push(header(summary));
  if (summary.total_runs === 0) {
    body.push(
      `<section class="card" id="no-runs"><h2>No runs</h2><p class="empty">${escapeHtml(noRunsReason(summary))} There is nothing to chart.</p></section>`,
    );
  } else {
    const tableModels = options.maxTableModels ?? 100;
    body.push(outcomesSection(summary, charts, colorOf, tableModels));
    body.push(latencySection(summary, charts, tableModels));
    body.push(timelineSection(summary, charts));
    body.push(escalatedSection(summary, tasks, tasksOmitted, colorOf));
  }

  const range =
    summary.range.first_ts === null ? 'no runs' : `${summary.total_runs.toLocaleString('en-US')} runs, ${rangeText(summary)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="generator" content="ollama-runner-mcp report --html">
<link rel="icon" href="data:,">
<title>${escapeHtml(`Run report: ${range}`)}</title>
<style>${STYLE}</style>
</head>
<body>
${body.join('\n')}
<footer>Made by <code>ollama-runner-mcp report --html</code> at ${escapeHtml(time(summary.generated_at))} UTC. Figures are computed over the selected runs; the data is embedded in this file (<code>#report-summary</code>).</footer>
<script type="application/json" id="report-summary">${scriptJson(embeddedSummary)}</script>
<script type="application/json" id="report-charts">${scriptJson(charts)}</script>
<script>${library}</script>
<script>${client}</script>
</body>
</html>
`;
}

// ---------------------------------------------------------------------------------------- sections

function header(s: RunsSummary): string {
  const facts: [string, string][] = [];
  facts.push(['Time range', s.range.first_ts === null ? 'no runs' : escapeHtml(rangeText(s))]);
  const okPct = s.total_runs > 0 ? `, ${((s.total_ok / s.total_runs) * 100).toFixed(1)}%` : '';
  facts.push([
    'Runs',
    s.total_runs === 0
      ? '<strong>0</strong>'
      : `<strong>${num(s.total_runs)}</strong> (${num(s.total_ok)} ok${okPct}; ${num(s.total_escalations)} escalation${s.total_escalations === 1 ? '' : 's'}; ${num(s.models.length)} model${s.models.length === 1 ? '' : 's'})`,
  ]);
  facts.push([
    'Files read',
    s.files.length === 0 ? 'none (no run log found)' : s.files.map((f) => `<code>${escapeHtml(f)}</code>`).join(', '),
  ]);
  const skipped = [`${num(s.skipped_lines)} torn or unreadable`];
  if (s.blank_lines > 0) skipped.push(`${num(s.blank_lines)} blank`);
  if (s.unrecognized_records > 0) skipped.push(`${num(s.unrecognized_records)} JSON object(s) that are not runs`);
  facts.push(['Skipped lines', `<span class="${s.skipped_lines > 0 ? 'warn' : ''}">${skipped.join(', ')}</span>`]);
  facts.push(['Filters', escapeHtml(filterText(s))]);
  const notes: string[] = [];
  if (s.models_truncated) notes.push('More than 500 models: the runs of the rest are counted under "(other)".');
  if (s.escalations_without_task > 0)
    notes.push(
      `${num(s.escalations_without_task)} escalation(s) had no task_id: they are counted, but not in the table of tasks.`,
    );
  return `<header>
<h1>Run report <span class="product">ollama-runner-mcp</span></h1>
<dl class="facts">
${facts.map(([k, v]) => `<div><dt>${k}</dt><dd>${v}</dd></div>`).join('\n')}
</dl>
${notes.map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('\n')}
</header>`;
}

function outcomesSection(s: RunsSummary, charts: ReportCharts, colorOf: (status: string) => string, tableModels: number): string {
  const chart = charts.outcomes!;
  const statuses = failureStatuses(s);
  const height = Math.max(200, 110 + 34 * chart.labels.length);
  const shown =
    chart.models_total > chart.labels.length
      ? `<p class="note">The chart shows the ${chart.labels.length} models with the most runs of ${num(chart.models_total)}.</p>`
      : '';
  const head = [
    '<th>model</th>',
    '<th class="n">runs</th>',
    `<th class="n">${swatch(colorOf('ok'))}ok</th>`,
    '<th class="n">ok %</th>',
    ...statuses.map((st) => `<th class="n">${swatch(colorOf(st))}${escapeHtml(st)}</th>`),
    '<th class="n">escalations</th>',
    '<th class="n">circuit openings</th>',
  ].join('');
  const rows = s.models
    .slice(0, tableModels)
    .map((m) =>
      [
        `<td class="name">${escapeHtml(m.model)}</td>`,
        `<td class="n">${num(m.runs)}</td>`,
        `<td class="n">${num(m.ok)}</td>`,
        `<td class="n ${m.ok_pct >= 95 ? 'good' : m.ok_pct >= 80 ? 'warn' : 'bad'}">${m.ok_pct.toFixed(1)}%</td>`,
        ...statuses.map(
          (st) => `<td class="n${ownCount(m.failures, st) > 0 ? ' bad' : ' zero'}">${num(ownCount(m.failures, st))}</td>`,
        ),
        `<td class="n${m.escalations > 0 ? ' warn' : ' zero'}">${num(m.escalations)}</td>`,
        `<td class="n${m.circuit_openings > 0 ? ' warn' : ' zero'}">${num(m.circuit_openings)}</td>`,
      ].join(''),
    );
  return `<section class="card" id="outcomes">
<h2>Outcomes per model</h2>
<p class="note">Every run counts, rejected ones (<code>circuit_open</code>, <code>invalid_input</code>, ...) included. One colour per status, the same in the table.</p>
<div class="chart" style="height:${height}px"><canvas data-chart="outcomes" role="img" aria-label="Stacked bar chart: runs per model by outcome status"></canvas></div>
${shown}
${table('outcomes-table', head, rows)}
${tableNote(s.models.length, tableModels)}
</section>`;
}

function latencySection(s: RunsSummary, charts: ReportCharts, tableModels: number): string {
  const chart = charts.latency;
  const spawned = s.models.filter((m) => m.spawned > 0);
  const body =
    chart === null
      ? '<p class="empty" data-chart-empty="latency">No selected run spawned a process (all were rejected before starting), so there are no durations to chart.</p>'
      : `<div class="chart" style="height:360px"><canvas data-chart="latency" role="img" aria-label="Grouped bar chart: spawned runs per duration bucket, one series per model"></canvas></div>
${chart.models_total > chart.series.length ? `<p class="note">The chart shows the ${chart.series.length} models with the most runs of ${num(chart.models_total)}.</p>` : ''}`;
  const head = [
    '<th>model</th>',
    '<th class="n">spawned runs</th>',
    '<th class="n">p50</th>',
    '<th class="n">p95</th>',
    '<th class="n">max</th>',
    '<th class="n">queue p50</th>',
  ].join('');
  const colorOfModel = new Map((chart?.series ?? []).map((series) => [series.key, series.color]));
  const rows = spawned.slice(0, tableModels).map((m) => {
    const color = colorOfModel.get(m.model);
    return [
      `<td class="name">${color === undefined ? '' : swatch(color)}${escapeHtml(m.model)}</td>`,
      `<td class="n">${num(m.spawned)}</td>`,
      `<td class="n">${duration(m.duration_ms.p50)}</td>`,
      `<td class="n">${duration(m.duration_ms.p95)}</td>`,
      `<td class="n">${duration(m.duration_ms.max)}</td>`,
      `<td class="n">${duration(m.queue_ms.p50)}</td>`,
    ].join('');
  });
  return `<section class="card" id="latency">
<h2>Latency per model</h2>
<p class="note">Runs that spawned a process (<code>duration_ms &gt; 0</code>), by duration from spawn to exit. p50 and p95 are within 1%; max is exact; queue p50 is the time waiting for a slot.</p>
${body}
${spawned.length > 0 ? table('latency-table', head, rows) : ''}
${tableNote(spawned.length, tableModels)}
</section>`;
}

function timelineSection(s: RunsSummary, charts: ReportCharts): string {
  const chart = charts.timeline;
  const t = s.timeline;
  const counts = { escalation: 0, circuit_opening: 0 };
  for (const e of t.events) counts[e.kind] += 1;
  const notes: string[] = [];
  if (t.events_truncated) notes.push(`Only the ${num(t.events.length)} most recent events are marked.`);
  const body =
    chart === null
      ? '<p class="empty" data-chart-empty="timeline">No selected run has a readable time (<code>ts</code>), so there is no timeline.</p>'
      : `<div class="chart" style="height:380px"><canvas data-chart="timeline" role="img" aria-label="Stacked bar chart of ok and failed runs per time bucket, with markers for escalations and circuit openings"></canvas></div>`;
  return `<section class="card" id="timeline">
<h2>Runs over time</h2>
<p class="note">${num(t.buckets.length)} bucket${t.buckets.length === 1 ? '' : 's'} of ${escapeHtml(bucketWords(t.bucket))}; markers at the exact time of each event: <span class="mark esc">&#9650;</span> ${num(counts.escalation)} escalation${counts.escalation === 1 ? '' : 's'}, <span class="mark open">&#9670;</span> ${num(counts.circuit_opening)} circuit opening${counts.circuit_opening === 1 ? '' : 's'}. Hover a marker for the model, task and reason.</p>
${body}
${notes.map((n) => `<p class="note">${escapeHtml(n)}</p>`).join('\n')}
</section>`;
}

function escalatedSection(
  s: RunsSummary,
  tasks: RunsSummary['escalated_tasks'],
  omitted: number,
  colorOf: (status: string) => string,
): string {
  const notes: string[] = [];
  if (omitted > 0) notes.push(`${num(omitted)} more escalated task(s) not listed here: <code>report --json</code> has them.`);
  if (s.escalated_tasks_truncated) notes.push('Only the 1000 most recently active escalated tasks were kept.');
  const head = [
    '<th>task</th>',
    '<th>model</th>',
    '<th class="n">attempts</th>',
    '<th>last status</th>',
    '<th>reason</th>',
    '<th>last error</th>',
    '<th>last time (UTC)</th>',
  ].join('');
  const rows = tasks.map((t) =>
    [
      `<td class="name">${escapeHtml(t.task_id)}</td>`,
      `<td class="name">${escapeHtml(t.model)}</td>`,
      `<td class="n">${num(t.attempts)}</td>`,
      `<td class="status">${swatch(colorOf(t.last_status))}${escapeHtml(t.last_status)}</td>`,
      `<td>${t.escalation_reason === null ? '<span class="zero">-</span>' : escapeHtml(t.escalation_reason)}</td>`,
      `<td class="error">${t.last_error === null ? '<span class="zero">-</span>' : escapeHtml(t.last_error)}</td>`,
      `<td class="time">${t.last_ts === null ? '-' : escapeHtml(time(t.last_ts))}</td>`,
    ].join(''),
  );
  return `<section class="card" id="escalated">
<h2>Escalated tasks${tasks.length > 0 ? ` (${num(s.escalated_tasks.length)}, most recent first)` : ''}</h2>
${tasks.length === 0 ? '<p class="note">No task escalated in this selection.</p>' : table('escalated-table', head, rows)}
${notes.map((n) => `<p class="note">${n}</p>`).join('\n')}
</section>`;
}

function tableNote(total: number, max: number): string {
  if (total <= max) return '';
  return `<p class="note">The table lists the ${num(max)} models with the most runs of ${num(total)}; the embedded data (<code>#report-summary</code>) and <code>report --json</code> have them all.</p>`;
}

function table(id: string, head: string, rows: readonly string[]): string {
  return `<div class="table-wrap"><table id="${id}"><thead><tr>${head}</tr></thead><tbody>
${rows.map((r) => `<tr>${r}</tr>`).join('\n')}
</tbody></table></div>`;
}

// ---------------------------------------------------------------------------------------- helpers

/** Text for an HTML element or a double- or single-quoted attribute; control characters become `?`. */
export function escapeHtml(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g, '?')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>` and `&` (and U+2028/2029) are
 * written as `\u` escapes, so no text from the log (`</script>`, `<!--`) can end the element early,
 * and `JSON.parse(element.textContent)` gives the value back unchanged.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function failureStatuses(s: RunsSummary): string[] {
  const statuses = new Set<string>();
  for (const m of s.models) for (const status of Object.keys(m.failures)) statuses.add(status);
  return [...statuses].sort(compareStatuses);
}

/** A colour per status: the fixed one, or the next extra colour for a status the list does not know. */
function statusColors(s: RunsSummary): (status: string) => string {
  const extra = new Map<string, string>();
  for (const status of failureStatuses(s)) {
    if (!(status in STATUS_COLORS) && !extra.has(status)) extra.set(status, EXTRA_COLORS[extra.size % EXTRA_COLORS.length]!);
  }
  return (status) =>
    (Object.hasOwn(STATUS_COLORS, status) ? (STATUS_COLORS as Record<string, string>)[status] : undefined) ??
    extra.get(status) ??
    '#757575';
}

function swatch(color: string): string {
  return `<span class="swatch" style="background:${color}"></span>`;
}

function noRunsReason(s: RunsSummary): string {
  if (s.files.length === 0) return 'No run log was found in the directory read.';
  if (filterText(s) !== 'none') return 'No run in the log matches the filters.';
  return 'The run log holds no runs yet.';
}

function filterText(s: RunsSummary): string {
  const parts = [
    s.filters.since !== null ? `since ${time(s.filters.since)} UTC` : null,
    s.filters.model !== null ? `model ${s.filters.model}` : null,
    s.filters.task !== null ? `task ${s.filters.task}` : null,
    s.filters.status !== null ? `status ${s.filters.status.join(', ')}` : null,
  ].filter((part) => part !== null);
  return parts.length === 0 ? 'none' : parts.join('; ');
}

function rangeText(s: RunsSummary): string {
  const { first_ts: first, last_ts: last } = s.range;
  if (first === null || last === null) return '-';
  const a = time(first);
  const b = time(last);
  const span = Date.parse(last) - Date.parse(first);
  const to = a.slice(0, 10) === b.slice(0, 10) ? b.slice(11) : b;
  return `${a} to ${to} UTC (${span > 0 ? duration(span) : 'one moment'})`;
}

/** `2025-11-22T10:15:30.123Z` -> `2025-11-22 10:15:30`. */
function time(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, '');
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

function cutText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** A bucket bound for an axis: `100ms`, `2.5s`, `1m`, `10m`. */
function shortDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${ms / 1000}s`;
  if (ms < 3_600_000) return `${ms / 60_000}m`;
  return `${ms / 3_600_000}h`;
}

/** `5m` -> `5 minutes`. */
function bucketWords(bucket: string): string {
  const match = /^(\d+)([mhd])$/.exec(bucket);
  if (match === null) return bucket;
  const n = Number(match[1]);
  const unit = { m: 'minute', h: 'hour', d: 'day' }[match[2] as 'm' | 'h' | 'd'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const TICK_STEPS_MS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720]
  .map((m) => m * MINUTE_MS)
  .concat([1, 2, 7, 14, 28].map((d) => d * DAY_MS));

/** Ticks every step, no finer than a bucket, at most about 12 over the span. */
function tickStep(spanMs: number, bucketMs: number): number {
  for (const step of TICK_STEPS_MS) if (step >= bucketMs && spanMs / step <= 12) return step;
  let step = TICK_STEPS_MS[TICK_STEPS_MS.length - 1]!;
  while (step < bucketMs || spanMs / step > 12) step *= 2;
  return step;
}

const STYLE = `
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; --card: #ffffff; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, section.card, footer { max-width: 1180px; margin: 0 auto 16px; }
header { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; }
h1 { margin: 0 0 12px; font-size: 22px; }
h1 .product { font-size: 14px; font-weight: normal; color: var(--muted); margin-left: 8px; }
h2 { margin: 0 0 6px; font-size: 17px; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 6px 24px; margin: 0; }
dl.facts div { display: flex; gap: 10px; }
dt { flex: 0 0 105px; color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
section.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; }
.chart { position: relative; width: 100%; margin: 8px 0 12px; }
.note { color: var(--muted); margin: 4px 0 8px; font-size: 13px; }
.empty { font-size: 15px; padding: 12px 14px; background: #fff8e1; border: 1px solid #ffe082; border-radius: 6px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { overflow-wrap: anywhere; min-width: 11em; }
td.status { white-space: nowrap; }
td.error { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; min-width: 20em; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
.zero { color: #8c959f; }
.bad { color: #b42318; font-weight: 600; }
.warn { color: #9a6700; font-weight: 600; }
.good { color: #1a7f37; font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: baseline; }
.mark.esc { color: #ffb300; -webkit-text-stroke: 0.6px #6d4c00; }
.mark.open { color: #4527a0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
footer { color: var(--muted); font-size: 12px; }
@media print { body { background: #fff; padding: 0; } header, section.card { border: none; break-inside: avoid; } }
`;
