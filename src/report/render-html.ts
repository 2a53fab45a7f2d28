import { createHash } from 'node:crypto';
import { html, joinHtml, lines, scriptJson, trustedHtml, type Html } from './html.js';
import { REPORT_CLIENT_SCRIPT } from './html-client.js';
import { count as num, cutText, duration, filterPhrases, pct, time } from './format.js';
import {
  attentionSection,
  causesSection,
  chainsSection,
  escalatedSection,
  latencySection,
  loadsSection,
  hostsSection,
  outcomesSection,
  TABLE_MODELS,
  timelineSection,
  tokensSection,
} from './html-sections.js';
import { mostLoadsFirst } from './model-loads.js';
import { buildReportCharts, modelColors, statusColors, type ReportCharts } from './report-charts.js';
import { REPORT_STYLE } from './report-style.js';
import type { RunsSummary } from './summary-schema.js';

/** Error texts longer than this are cut in the page (the log's own are at most 500 characters). */
const ERROR_CHARS = 500;
/** Error texts of the attention items and causes, shorter: they are many lines of the first screen. */
const SHORT_ERROR_CHARS = 300;
/** Escalated tasks listed, most recent first; the others are counted in a note. */
const MAX_ESCALATED_TASKS = 100;
/** Open circuits, unresolved tasks and causes listed at most (the rest are counted). */
const MAX_ATTENTION_CIRCUITS = 100;
const MAX_ATTENTION_TASKS = 100;
const MAX_CAUSES = 50;

/**
 * The report as one self-contained HTML page: a header, then the sections (see `sections`). Chart.js
 * is inlined and a Content-Security-Policy forbids every network request, so the page opens offline
 * and cannot call out. The summary is embedded as JSON (`#report-summary`, cut to the rows shown);
 * every text from the log is escaped. Pure: same summary and options, same page.
 *
 * @param options.chartLibrary the source of Chart.js's UMD build (it defines the global `Chart`), as
 *   `loadChartLibrary()` reads the installed one
 */
export function renderReportHtml(summary: RunsSummary, options: { readonly chartLibrary: string }): string {
  const embedded = embeddedSummary(summary);
  const charts = buildReportCharts(summary);
  const library = options.chartLibrary.replace(/<\/(script)/gi, '<\\/$1');
  const client = REPORT_CLIENT_SCRIPT;
  const csp = contentSecurityPolicy([library, client]);
  const body = [header(summary), ...sections(summary, embedded, charts)];
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
<script type="application/json" id="report-summary">${trustedHtml(scriptJson(embedded))}</script>
<script type="application/json" id="report-charts">${trustedHtml(scriptJson(charts))}</script>
<script>${trustedHtml(library)}</script>
<script>${trustedHtml(client)}</script>
</body>
</html>
`.value;
}

/** No request of any kind; only the page's own two scripts, allowed by hash. */
function contentSecurityPolicy(scripts: readonly string[]): string {
  const hashes = scripts.map((s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src ${hashes.join(' ')}`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/** The sections after the header, in the order a reviewer needs them; one card when there are no runs. */
function sections(summary: RunsSummary, embedded: RunsSummary, charts: ReportCharts): Html[] {
  if (summary.total_runs === 0) {
    return [
      html`<section class="card" id="no-runs"><h2>No runs</h2><p class="empty">${noRunsReason(summary)} There is nothing to chart.</p></section>`,
    ];
  }
  const colorOfModel = modelColors(summary);
  const colorOfStatus = statusColors(summary);
  return [
    attentionSection(summary, embedded.attention, colorOfModel),
    causesSection(summary, embedded.escalation_causes, colorOfModel),
    outcomesSection(summary, charts, colorOfStatus, colorOfModel),
    latencySection(summary, charts, colorOfModel),
    tokensSection(summary, charts, colorOfModel),
    ...(summary.timeline.loads.length > 0 ? [loadsSection(summary, shownLoads(summary), colorOfModel)] : []),
    ...((summary.hosts?.length ?? 0) > 1 ? [hostsSection(summary)] : []),
    chainsSection(summary, colorOfModel),
    timelineSection(summary, charts),
    escalatedSection(summary, embedded.escalated_tasks, colorOfStatus),
  ];
}

/** The summary embedded in the page: the lists cut to the rows shown, their errors shortened. */
function embeddedSummary(summary: RunsSummary): RunsSummary {
  const cutError = (text: string | null, max: number): string | null => (text === null ? null : cutText(text, max));
  const shown = new Set(shownLoads(summary));
  return {
    ...summary,
    escalated_tasks: summary.escalated_tasks
      .slice(0, MAX_ESCALATED_TASKS)
      .map((t) => ({ ...t, last_error: cutError(t.last_error, ERROR_CHARS) })),
    attention: {
      ...summary.attention,
      tasks: summary.attention.tasks
        .slice(0, MAX_ATTENTION_TASKS)
        .map((t) => ({ ...t, last_error: cutError(t.last_error, SHORT_ERROR_CHARS) })),
      circuits_open: summary.attention.circuits_open
        .slice(0, MAX_ATTENTION_CIRCUITS)
        .map((c) => ({ ...c, last_error: cutError(c.last_error, SHORT_ERROR_CHARS) })),
    },
    escalation_causes: summary.escalation_causes
      .slice(0, MAX_CAUSES)
      .map((c) => ({ ...c, error: cutError(c.error, SHORT_ERROR_CHARS) })),
    chains: { ...summary.chains, rows: summary.chains.rows.slice(0, TABLE_MODELS) },
    timeline: { ...summary.timeline, loads: summary.timeline.loads.filter((row) => shown.has(row)) },
  };
}

/** The days x models of the loads table: the most loads first. */
function shownLoads(summary: RunsSummary): RunsSummary['timeline']['loads'] {
  return mostLoadsFirst(summary.timeline.loads).slice(0, TABLE_MODELS);
}

function header(s: RunsSummary): Html {
  const facts: [string, Html][] = [];
  facts.push(['Time range', s.range.first_ts === null ? html`no runs` : html`${rangeText(s)}`]);
  const okPct = s.total_runs > 0 ? `, ${pct((s.total_ok / s.total_runs) * 100)}` : '';
  facts.push([
    'Runs',
    s.total_runs === 0
      ? html`<strong>0</strong>`
      : html`<strong>${num(s.total_runs)}</strong> (${num(s.total_ok)} ok${okPct}; ${num(s.total_escalations)} escalation${s.total_escalations === 1 ? '' : 's'}; ${num(s.models.length)} model${s.models.length === 1 ? '' : 's'})`,
  ]);
  const codeOf = (path: string) => html`<code>${path}</code>`;
  const code = (paths: readonly string[]) => joinHtml(paths.map(codeOf), ', ');
  if (s.dirs.length > 1) facts.push(['Dirs read', code(s.dirs)]);
  const unread =
    s.files_skipped > 0 ? html`; ${num(s.files_skipped)} older file(s) not read (every record before the time window)` : '';
  facts.push(['Files read', s.files.length === 0 ? html`none (no run log found)` : html`${code(s.files)}${unread}`]);
  const skipped = [`${num(s.skipped_lines)} torn or unreadable`];
  if (s.blank_lines > 0) skipped.push(`${num(s.blank_lines)} blank`);
  if (s.unrecognized_records > 0) skipped.push(`${num(s.unrecognized_records)} JSON object(s) that are not runs`);
  facts.push(['Skipped lines', html`<span class="${s.skipped_lines > 0 ? 'warn' : ''}">${skipped.join(', ')}</span>`]);
  facts.push(['Filters', html`${filterText(s)}`]);
  const notes: string[] = [];
  if (s.models_truncated) notes.push('More than 500 models: the runs of the rest are counted under "(other)".');
  if (s.escalations_without_task > 0) {
    const count = num(s.escalations_without_task);
    notes.push(`${count} escalation(s) had no task_id: they are counted, but not in the table of tasks.`);
  }
  return html`<header>
<h1>Run report <span class="product">ollama-runner-mcp</span></h1>
<dl class="facts">
${lines(facts.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v}</dd></div>`))}
</dl>
${lines(notes.map((n) => html`<p class="note">${n}</p>`))}
</header>`;
}

function noRunsReason(s: RunsSummary): string {
  if (s.files.length === 0) return 'No run log was found in the directory read.';
  if (filterText(s) !== 'none') return 'No run in the log matches the filters.';
  return 'The run log holds no runs yet.';
}

function filterText(s: RunsSummary): string {
  const parts = filterPhrases(s.filters, ', ');
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
