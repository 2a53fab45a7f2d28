import { createHash } from 'node:crypto';
import { html, joinHtml, scriptJson, trustedHtml, type Html } from './html.js';
import { REPORT_CLIENT_SCRIPT } from './html-client.js';
import { duration } from './render-text.js';
import {
  buildReportCharts,
  bucketWords,
  failureStatuses,
  statusColors,
  type ChartOptions,
  type ReportCharts,
} from './report-charts.js';
import { REPORT_STYLE } from './report-style.js';
import { ownCount } from './summary.js';
import type { RunsSummary } from './summary-schema.js';

// The browser tests read the status colours from here.
export { STATUS_COLORS } from './report-charts.js';

/** Options of {@link renderReportHtml}. */
export interface RenderHtmlOptions extends ChartOptions {
  /**
   * Source of Chart.js's UMD build (it defines the global `Chart`), inlined in the page so that it
   * opens with no network: `loadChartLibrary()` reads the installed one.
   */
  readonly chartLibrary: string;
  /** Escalated tasks listed, most recent first; the others are counted in a note. @default 200 */
  readonly maxEscalatedTasks?: number;
  /** Models listed in each table (most runs first); the embedded summary keeps them all. @default 100 */
  readonly maxTableModels?: number;
}

/** Error texts longer than this are cut in the page (the log's own are at most 500 characters). */
const ERROR_CHARS = 500;

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

  const body: Html[] = [header(summary)];
  if (summary.total_runs === 0) {
    body.push(
      html`<section class="card" id="no-runs"><h2>No runs</h2><p class="empty">${noRunsReason(summary)} There is nothing to chart.</p></section>`,
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
  // scriptJson makes the data safe inside a script element; the two scripts are ours (hashed in the CSP).
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="generator" content="ollama-runner-mcp report --html">
<link rel="icon" href="data:,">
<title>${`Run report: ${range}`}</title>
<style>${trustedHtml(REPORT_STYLE)}</style>
</head>
<body>
${lines(body)}
<footer>Made by <code>ollama-runner-mcp report --html</code> at ${time(summary.generated_at)} UTC. Figures are computed over the selected runs; the data is embedded in this file (<code>#report-summary</code>).</footer>
<script type="application/json" id="report-summary">${trustedHtml(scriptJson(embeddedSummary))}</script>
<script type="application/json" id="report-charts">${trustedHtml(scriptJson(charts))}</script>
<script>${trustedHtml(library)}</script>
<script>${trustedHtml(client)}</script>
</body>
</html>
`.value;
}

// ---------------------------------------------------------------------------------------- sections

function header(s: RunsSummary): Html {
  const facts: [string, Html][] = [];
  facts.push(['Time range', s.range.first_ts === null ? html`no runs` : html`${rangeText(s)}`]);
  const okPct = s.total_runs > 0 ? `, ${((s.total_ok / s.total_runs) * 100).toFixed(1)}%` : '';
  facts.push([
    'Runs',
    s.total_runs === 0
      ? html`<strong>0</strong>`
      : html`<strong>${num(s.total_runs)}</strong> (${num(s.total_ok)} ok${okPct}; ${num(s.total_escalations)} escalation${s.total_escalations === 1 ? '' : 's'}; ${num(s.models.length)} model${s.models.length === 1 ? '' : 's'})`,
  ]);
  const files = s.files.map((f) => html`<code>${f}</code>`);
  facts.push(['Files read', s.files.length === 0 ? html`none (no run log found)` : joinHtml(files, ', ')]);
  const skipped = [`${num(s.skipped_lines)} torn or unreadable`];
  if (s.blank_lines > 0) skipped.push(`${num(s.blank_lines)} blank`);
  if (s.unrecognized_records > 0) skipped.push(`${num(s.unrecognized_records)} JSON object(s) that are not runs`);
  facts.push(['Skipped lines', html`<span class="${s.skipped_lines > 0 ? 'warn' : ''}">${skipped.join(', ')}</span>`]);
  facts.push(['Filters', html`${filterText(s)}`]);
  const notes: string[] = [];
  if (s.models_truncated) notes.push('More than 500 models: the runs of the rest are counted under "(other)".');
  if (s.escalations_without_task > 0)
    notes.push(
      `${num(s.escalations_without_task)} escalation(s) had no task_id: they are counted, but not in the table of tasks.`,
    );
  return html`<header>
<h1>Run report <span class="product">ollama-runner-mcp</span></h1>
<dl class="facts">
${lines(facts.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v}</dd></div>`))}
</dl>
${lines(notes.map((n) => html`<p class="note">${n}</p>`))}
</header>`;
}

function outcomesSection(s: RunsSummary, charts: ReportCharts, colorOf: (status: string) => string, tableModels: number): Html {
  const chart = charts.outcomes!;
  const statuses = failureStatuses(s);
  const height = Math.max(200, 110 + 34 * chart.labels.length);
  const shown =
    chart.models_total > chart.labels.length
      ? html`<p class="note">The chart shows the ${chart.labels.length} models with the most runs of ${num(chart.models_total)}.</p>`
      : '';
  const head = [
    html`<th>model</th>`,
    html`<th class="n">runs</th>`,
    html`<th class="n">${swatch(colorOf('ok'))}ok</th>`,
    html`<th class="n">ok %</th>`,
    ...statuses.map((st) => html`<th class="n">${swatch(colorOf(st))}${st}</th>`),
    html`<th class="n">escalations</th>`,
    html`<th class="n">circuit openings</th>`,
  ];
  const rows = s.models
    .slice(0, tableModels)
    .map((m) => [
      html`<td class="name">${m.model}</td>`,
      html`<td class="n">${num(m.runs)}</td>`,
      html`<td class="n">${num(m.ok)}</td>`,
      html`<td class="n ${m.ok_pct >= 95 ? 'good' : m.ok_pct >= 80 ? 'warn' : 'bad'}">${m.ok_pct.toFixed(1)}%</td>`,
      ...statuses.map(
        (st) => html`<td class="n${ownCount(m.failures, st) > 0 ? ' bad' : ' zero'}">${num(ownCount(m.failures, st))}</td>`,
      ),
      html`<td class="n${m.escalations > 0 ? ' warn' : ' zero'}">${num(m.escalations)}</td>`,
      html`<td class="n${m.circuit_openings > 0 ? ' warn' : ' zero'}">${num(m.circuit_openings)}</td>`,
    ]);
  return html`<section class="card" id="outcomes">
<h2>Outcomes per model</h2>
<p class="note">Every run counts, rejected ones (<code>circuit_open</code>, <code>invalid_input</code>, ...) included. One colour per status, the same in the table.</p>
<div class="chart" style="height:${height}px"><canvas data-chart="outcomes" role="img" aria-label="Stacked bar chart: runs per model by outcome status"></canvas></div>
${shown}
${table('outcomes-table', head, rows)}
${tableNote(s.models.length, tableModels)}
</section>`;
}

function latencySection(s: RunsSummary, charts: ReportCharts, tableModels: number): Html {
  const chart = charts.latency;
  const spawned = s.models.filter((m) => m.spawned > 0);
  const body =
    chart === null
      ? html`<p class="empty" data-chart-empty="latency">No selected run spawned a process (all were rejected before starting), so there are no durations to chart.</p>`
      : html`<div class="chart" style="height:360px"><canvas data-chart="latency" role="img" aria-label="Grouped bar chart: spawned runs per duration bucket, one series per model"></canvas></div>
${chart.models_total > chart.series.length ? html`<p class="note">The chart shows the ${chart.series.length} models with the most runs of ${num(chart.models_total)}.</p>` : ''}`;
  const head = ['model', 'spawned runs', 'p50', 'p95', 'max', 'queue p50'].map((name, i) =>
    i === 0 ? html`<th>${name}</th>` : html`<th class="n">${name}</th>`,
  );
  const colorOfModel = new Map((chart?.series ?? []).map((series) => [series.key, series.color]));
  const rows = spawned.slice(0, tableModels).map((m) => {
    const color = colorOfModel.get(m.model);
    return [
      html`<td class="name">${color === undefined ? '' : swatch(color)}${m.model}</td>`,
      html`<td class="n">${num(m.spawned)}</td>`,
      html`<td class="n">${duration(m.duration_ms.p50)}</td>`,
      html`<td class="n">${duration(m.duration_ms.p95)}</td>`,
      html`<td class="n">${duration(m.duration_ms.max)}</td>`,
      html`<td class="n">${duration(m.queue_ms.p50)}</td>`,
    ];
  });
  return html`<section class="card" id="latency">
<h2>Latency per model</h2>
<p class="note">Runs that spawned a process (<code>duration_ms &gt; 0</code>), by duration from spawn to exit. p50 and p95 are within 1%; max is exact; queue p50 is the time waiting for a slot.</p>
${body}
${spawned.length > 0 ? table('latency-table', head, rows) : ''}
${tableNote(spawned.length, tableModels)}
</section>`;
}

function timelineSection(s: RunsSummary, charts: ReportCharts): Html {
  const chart = charts.timeline;
  const t = s.timeline;
  const counts = { escalation: 0, circuit_opening: 0 };
  for (const e of t.events) counts[e.kind] += 1;
  const notes: string[] = [];
  if (t.events_truncated) notes.push(`Only the ${num(t.events.length)} most recent events are marked.`);
  const body =
    chart === null
      ? html`<p class="empty" data-chart-empty="timeline">No selected run has a readable time (<code>ts</code>), so there is no timeline.</p>`
      : html`<div class="chart" style="height:380px"><canvas data-chart="timeline" role="img" aria-label="Stacked bar chart of ok and failed runs per time bucket, with markers for escalations and circuit openings"></canvas></div>`;
  return html`<section class="card" id="timeline">
<h2>Runs over time</h2>
<p class="note">${num(t.buckets.length)} bucket${t.buckets.length === 1 ? '' : 's'} of ${bucketWords(t.bucket)}; markers at the exact time of each event: <span class="mark esc">&#9650;</span> ${num(counts.escalation)} escalation${counts.escalation === 1 ? '' : 's'}, <span class="mark open">&#9670;</span> ${num(counts.circuit_opening)} circuit opening${counts.circuit_opening === 1 ? '' : 's'}. Hover a marker for the model, task and reason.</p>
${body}
${lines(notes.map((n) => html`<p class="note">${n}</p>`))}
</section>`;
}

function escalatedSection(
  s: RunsSummary,
  tasks: RunsSummary['escalated_tasks'],
  omitted: number,
  colorOf: (status: string) => string,
): Html {
  const notes: Html[] = [];
  if (omitted > 0) notes.push(html`${num(omitted)} more escalated task(s) not listed here: <code>report --json</code> has them.`);
  if (s.escalated_tasks_truncated) notes.push(html`Only the 1000 most recently active escalated tasks were kept.`);
  const head = ['task', 'model', 'attempts', 'last status', 'reason', 'last error', 'last time (UTC)'].map((name) =>
    name === 'attempts' ? html`<th class="n">${name}</th>` : html`<th>${name}</th>`,
  );
  const none = html`<span class="zero">-</span>`;
  const rows = tasks.map((t) => [
    html`<td class="name">${t.task_id}</td>`,
    html`<td class="name">${t.model}</td>`,
    html`<td class="n">${num(t.attempts)}</td>`,
    html`<td class="status">${swatch(colorOf(t.last_status))}${t.last_status}</td>`,
    html`<td>${t.escalation_reason ?? none}</td>`,
    html`<td class="error">${t.last_error ?? none}</td>`,
    html`<td class="time">${t.last_ts === null ? '-' : time(t.last_ts)}</td>`,
  ]);
  return html`<section class="card" id="escalated">
<h2>Escalated tasks${tasks.length > 0 ? ` (${num(s.escalated_tasks.length)}, most recent first)` : ''}</h2>
${tasks.length === 0 ? html`<p class="note">No task escalated in this selection.</p>` : table('escalated-table', head, rows)}
${lines(notes.map((n) => html`<p class="note">${n}</p>`))}
</section>`;
}

function tableNote(total: number, max: number): Html | '' {
  if (total <= max) return '';
  return html`<p class="note">The table lists the ${num(max)} models with the most runs of ${num(total)}; the embedded data (<code>#report-summary</code>) and <code>report --json</code> have them all.</p>`;
}

function table(id: string, head: readonly Html[], rows: readonly (readonly Html[])[]): Html {
  return html`<div class="table-wrap"><table id="${id}"><thead><tr>${head}</tr></thead><tbody>
${lines(rows.map((cells) => html`<tr>${cells}</tr>`))}
</tbody></table></div>`;
}

/** One per line. */
function lines(parts: readonly Html[]): Html {
  return joinHtml(parts, '\n');
}

function swatch(color: string): Html {
  return html`<span class="swatch" style="background:${color}"></span>`;
}

// ---------------------------------------------------------------------------------------- text

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
