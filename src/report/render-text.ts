import { count, cutLine, duration, failureStatuses, filterPhrases, ownCount, pct, span, time } from './format.js';
import { looksLikeThrash, mostLoadsFirst } from './model-loads.js';
import type { CompactRunsSummary, ModelLoadRow, RunsSummary } from './summary-schema.js';
import { right, TextPage, type Cell, type Style } from './text-layout.js';
import { shortenPaths } from './short-paths.js';
import { terminalText } from '../ollama/terminal-text.js';

/** What the text report needs: a full summary or the tool's compact one (which has no timeline). */
type SummaryView = Omit<RunsSummary, 'timeline' | 'duration_buckets_ms'> &
  Partial<Pick<CompactRunsSummary, 'models_omitted' | 'escalated_tasks_omitted'>> &
  Partial<Pick<RunsSummary, 'timeline'>>;

/** Options of {@link renderReportText}. */
interface RenderTextOptions {
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
}

/** The text report's default width: fits 100 columns, readable in 80. */
const DEFAULT_TEXT_WIDTH = 100;
const MIN_WIDTH = 60;
/** Rows listed in the table of unresolved escalated tasks; `report --json` lists them all. */
const MAX_TASKS = 10;
/** Days x models listed in the table of model loads, and of them said in words as thrash. */
const MAX_LOAD_ROWS = 10;
const MAX_THRASH_LINES = 3;

/** A section's view of the report: the page it writes on, and how long errors may be. */
interface Context {
  readonly page: TextPage;
  readonly errorWidth: number;
}

/**
 * The terminal report, its sections in the order a reviewer needs them. Plain text unless `color` is
 * set; no line longer than `width`, and no control character from the log. Ends with a newline.
 */
export function renderReportText(summary: SummaryView, options: RenderTextOptions = {}): string {
  const width = Math.max(MIN_WIDTH, Math.floor(options.width ?? DEFAULT_TEXT_WIDTH));
  const page = new TextPage(width, options.color === true);
  const context: Context = { page, errorWidth: Math.min(options.errorWidth ?? width - 10, width - 10) };
  headerSection(context, summary);
  attentionSection(context, summary);
  if (summary.models.length === 0) {
    page.paragraph(summary.total_runs === 0 ? 'No runs match.' : 'No model rows.');
    return page.text();
  }
  causesSection(context, summary);
  outcomesSection(context, summary);
  latencySection(context, summary);
  tokensSection(context, summary);
  loadsSection(context, summary);
  hostsSection(context, summary);
  chainsSection(context, summary);
  escalatedTasksNote(context, summary);
  return page.text();
}

function headerSection({ page }: Context, s: SummaryView): void {
  const okPct = s.total_runs > 0 ? ` (${pct((s.total_ok / s.total_runs) * 100)})` : '';
  page.say(`Runs: ${count(s.total_runs)}, ok ${count(s.total_ok)}${okPct}, escalations ${count(s.total_escalations)}`, 'bold');
  const busy = s.chains.busy_retries;
  const fell = s.models.reduce((sum, m) => sum + m.retried.fell_through, 0);
  if (busy > 0 || fell > 0)
    page.say(
      `Retried by the server (not seen by callers): ${count(busy)} busy retr${busy === 1 ? 'y' : 'ies'}, ${count(fell)} chain fall-through(s)`,
    );
  const { first_ts: first, last_ts: last } = s.range;
  page.say(`Range: ${first === null ? '-' : `${time(first)} to ${time(last)} UTC`}`);
  if (s.dirs.length > 1) page.say(`Dirs: ${paths(page, s.dirs)}`, undefined, 'break');
  const unread =
    s.files_skipped > 0 ? `; ${count(s.files_skipped)} older file(s) not read (every record in them is before since)` : '';
  page.say(`Files: ${s.files.length === 0 ? '(no run log found)' : paths(page, s.files)}${unread}`, undefined, 'break');
  const filters = filterPhrases(s.filters, ',');
  if (filters.length > 0) page.say(`Filters: ${filters.join(', ')}`);
  const skipped = [
    `Skipped lines: ${count(s.skipped_lines)} (torn or unreadable)`,
    s.blank_lines > 0 ? `${count(s.blank_lines)} blank` : null,
    s.unrecognized_records > 0 ? `${count(s.unrecognized_records)} JSON object(s) that are not runs` : null,
  ].filter((part) => part !== null);
  page.say(skipped.join(', '), s.skipped_lines > 0 ? 'yellow' : undefined);
}

/**
 * A list of paths, each on one line of a sentence (a continuation line holds two spaces of indent and
 * a comma): shortened in the middle, as shown (escapes included), so two never print alike.
 */
function paths(page: TextPage, list: readonly string[]): string {
  return shortenPaths(list.map(terminalText), page.width - 3).join(', ');
}

function attentionSection(context: Context, s: SummaryView): void {
  const { page, errorWidth } = context;
  const attention = s.attention;
  if (attention.circuits_open.length === 0 && attention.tasks_total === 0) {
    page.heading('Needs attention now: nothing (no open circuit, no unresolved escalated task)');
    return;
  }
  page.heading('Needs attention now');
  for (const c of attention.circuits_open) {
    const retry =
      c.retry_at === null
        ? ''
        : Date.parse(c.retry_at) <= Date.parse(s.generated_at)
          ? `, cooldown over at ${time(c.retry_at)} (the next run probes it)`
          : `, retry at ${time(c.retry_at)}`;
    page.say(
      `Circuit ${c.state === 'half_open' ? 'half-open' : 'open'}: ${c.model}${c.since === null ? '' : ` since ${time(c.since)}`}, ${count(c.consecutive_failures)} failure(s) in a row${retry}`,
      'red',
    );
    if (c.last_error !== null) page.say(`  last error: ${cutLine(c.last_error, errorWidth)}`, 'dim');
  }
  if (attention.tasks_total > 0) attentionTasks(context, s.attention);
}

function attentionTasks({ page }: Context, attention: SummaryView['attention']): void {
  const blocked = attention.blocked_tasks > 0 ? ` (${count(attention.blocked_tasks)} blocked)` : '';
  page.say(
    `Tasks escalated, not reset nor answered since: ${count(attention.tasks_total)}${blocked}; ollama_reset clears one`,
    'yellow',
  );
  page.table(
    [{ header: 'task_id' }, { header: 'model' }, { header: 'reason' }, { header: 'escalated (UTC)' }, ...right('blocked')],
    attention.tasks
      .slice(0, MAX_TASKS)
      .map((t) => [
        { text: t.task_id },
        { text: t.model },
        { text: t.reason ?? t.status, style: 'yellow' },
        { text: time(t.escalated_at) },
        countCell(t.blocked),
      ]),
  );
  const more = attention.tasks_total - Math.min(MAX_TASKS, attention.tasks.length);
  if (more > 0) page.say(`${count(more)} more: report --json lists them (attention.tasks).`, 'dim');
}

function causesSection({ page, errorWidth }: Context, s: SummaryView): void {
  const causes = s.escalation_causes;
  if (causes.length === 0) {
    page.heading('Escalations: none');
    return;
  }
  const refusals = s.models.reduce((sum, m) => sum + ownCount(m.failures, 'blocked'), 0);
  const notCounted = refusals > 0 ? `; ${count(refusals)} blocked refusal(s) not counted` : '';
  page.heading(
    `Escalations by cause (${count(causes.length)} cause(s), ${count(s.total_escalations - refusals)} escalation(s)${notCounted})`,
  );
  const table = page.fitTable(
    [
      ...right('count', 'tasks'),
      { header: 'model' },
      { header: 'reason' },
      { header: 'status' },
      { header: 'first - last (UTC)' },
    ],
    causes.map((c) => [
      { text: count(c.escalations), style: 'yellow' },
      { text: count(c.tasks) },
      { text: c.model },
      { text: c.reason ?? '-' },
      { text: c.status, style: 'red' },
      { text: span(c.first_ts, c.last_ts) },
    ]),
  );
  if (table.length !== causes.length + 1) page.push(...table);
  else {
    // Under each cause: its example tasks and its error text.
    page.push(table[0]!);
    causes.forEach((c, i) => {
      page.push(table[i + 1]!);
      if (c.example_tasks.length > 0) page.say(`  e.g. ${c.example_tasks.join(', ')}`, 'dim');
      if (c.error !== null) page.say(`  error: ${cutLine(c.error, errorWidth)}`, 'dim');
    });
  }
  if (s.escalation_causes_truncated) page.say('More than 200 causes: the rest are not listed.');
  if (s.escalations_without_task > 0) page.say(`${count(s.escalations_without_task)} escalation(s) without a task_id.`);
}

function outcomesSection({ page }: Context, s: SummaryView): void {
  const failureKinds = failureStatuses(s.models).filter((kind) => kind !== 'timeout');
  page.heading('Outcomes per model (what callers saw)');
  page.table(
    [{ header: 'model' }, ...right('runs', 'ok %', 'timeouts', ...failureKinds, 'escalations', 'circuit openings')],
    s.models.map((m) => [
      { text: m.model },
      { text: count(m.runs) },
      { text: pct(m.ok_pct), style: m.ok_pct >= 95 ? 'green' : m.ok_pct >= 80 ? 'yellow' : 'red' },
      countCell(m.timeouts),
      ...failureKinds.map((kind) => countCell(ownCount(m.failures, kind))),
      countCell(m.escalations, 'yellow'),
      countCell(m.circuit_openings, 'yellow'),
    ]),
  );
  if (s.models_truncated) page.say(`Too many models: past the first 500, runs are counted under "(other)".`);
  if ((s.models_omitted ?? 0) > 0) page.say(`${count(s.models_omitted ?? 0)} more model(s) with fewer runs not shown.`);
}

function latencySection({ page }: Context, s: SummaryView): void {
  page.heading('Latency of answers, and time lost to failures');
  page.table(
    [{ header: 'model' }, ...right('answers', 'p50', 'p95', 'max', 'queue p50', 'failed attempts', 'time lost')],
    s.models.map((m) => [
      { text: m.model },
      { text: count(m.ok) },
      { text: duration(m.ok_duration_ms.p50) },
      { text: duration(m.ok_duration_ms.p95) },
      { text: duration(m.ok_duration_ms.max) },
      { text: duration(m.queue_ms.p50) },
      countCell(m.lost_attempts),
      { text: m.lost_attempts === 0 ? '-' : duration(m.lost_ms), style: m.lost_ms > 0 ? 'red' : undefined },
    ]),
  );
  page.say('p50/p95/max: spawn to exit of runs that answered (ok), within 1%; time lost: failed attempts that ran.', 'dim');
}

function tokensSection({ page }: Context, s: SummaryView): void {
  const rows = s.models.filter((m) => m.tokens.runs > 0 || m.tokens.may_be_truncated > 0);
  if (rows.length === 0) return;
  page.heading('Tokens per model');
  page.table(
    [{ header: 'model' }, ...right('runs', 'out tok/s', 'prompt p95', 'tokens in', 'tokens out', 'cold loads', 'truncated?')],
    rows.map(({ model, tokens: t }) => [
      { text: model },
      { text: count(t.runs) },
      { text: t.output_tps_p50 === null ? '-' : t.output_tps_p50.toFixed(1) },
      { text: t.prompt_tokens_p95 === null ? '-' : count(t.prompt_tokens_p95) },
      { text: count(t.prompt_tokens) },
      { text: count(t.output_tokens) },
      { text: count(t.cold_loads) },
      countCell(t.may_be_truncated),
    ]),
  );
  page.say(
    'out tok/s: median output tokens per second; prompt p95: prompt tokens; cold load: load_ms over 1 s (the model was loaded first); truncated?: runs warned prompt_may_be_truncated (raise num_ctx).',
    'dim',
  );
}

/** Runs, loads and failures per Ollama host, when the lines name more than one. */
function hostsSection({ page }: Context, s: SummaryView): void {
  const hosts = s.hosts ?? [];
  if (hosts.length < 2) return;
  page.heading(`Ollama hosts: ${count(hosts.length)}`);
  page.table(
    [{ header: 'host' }, ...right('runs', 'ok', 'failures', 'unreachable', 'loads')],
    hosts.map((row) => [
      { text: row.host },
      { text: count(row.runs) },
      { text: count(row.ok) },
      { text: count(row.failures), style: row.failures > 0 ? 'yellow' : undefined },
      { text: count(row.unreachable), style: row.unreachable > 0 ? 'yellow' : undefined },
      { text: count(row.loads) },
    ]),
  );
}

/** The days x models with the most loads, and those that look like thrash in words; only when something loaded. */
function loadsSection({ page }: Context, s: SummaryView): void {
  const loads = s.timeline?.loads ?? [];
  if (loads.length === 0) return;
  const mostFirst = mostLoadsFirst(loads);
  const total = loads.reduce((sum, row) => sum + row.loads, 0);
  page.heading(
    `Model loads per day (UTC): ${count(total)} load(s) of ${count(new Set(loads.map((r) => r.model)).size)} model(s)`,
  );
  page.table(
    [{ header: 'model' }, { header: 'day' }, ...right('loads', 'runs', 'load time')],
    mostFirst
      .slice(0, MAX_LOAD_ROWS)
      .map((row) => [
        { text: row.model },
        { text: row.day },
        { text: count(row.loads), style: looksLikeThrash(row) ? 'yellow' : undefined },
        { text: count(row.runs) },
        { text: duration(row.load_ms) },
      ]),
  );
  if (loads.length > MAX_LOAD_ROWS)
    page.say(`${count(loads.length - MAX_LOAD_ROWS)} more: report --json lists them (timeline.loads).`, 'dim');
  thrashLines(page, mostFirst.filter(looksLikeThrash));
  if (s.timeline?.loads_truncated === true) page.say('Only the most recent days are counted.', 'dim');
}

/** Thrash said plainly: "qwen2.5-coder:7b loaded 18 times for 18 runs on 2026-11-22". */
function thrashLines(page: TextPage, rows: readonly ModelLoadRow[]): void {
  for (const row of rows.slice(0, MAX_THRASH_LINES)) {
    const times = row.loads === 1 ? 'once' : `${count(row.loads)} times`;
    page.say(
      `${row.model} loaded ${times} for ${count(row.runs)} run${row.runs === 1 ? '' : 's'} on ${row.day} (${duration(row.load_ms)} loading)`,
      'yellow',
    );
  }
  if (rows.length > MAX_THRASH_LINES)
    page.say(`and ${count(rows.length - MAX_THRASH_LINES)} more day(s) x model(s) like these.`, 'yellow');
  page.say(
    rows.length > 0
      ? 'A load for most runs, many times a day, is thrash: models pushing each other out of memory (several servers or too many models on one Ollama, see docs/scheduling.md), or runs further apart than the keep-alive.'
      : 'load: a run that loaded its model (cold_load, or usage.load_ms of 100 ms or more); a model kept loaded between runs loads a few times a day.',
    'dim',
  );
}

function chainsSection({ page }: Context, s: SummaryView): void {
  const chains = s.chains;
  if (chains.calls === 0 && chains.busy_retries === 0 && chains.busy_gave_up === 0) return;
  page.heading('Fallback chains and busy retries');
  if (chains.calls > 0) {
    page.table(
      [{ header: 'first model' }, ...right('calls', 'fell through'), { header: 'to (calls, ok)', fill: true }],
      chains.rows.map((row) => [
        { text: row.first_model },
        { text: count(row.calls) },
        {
          text: `${count(row.fell_through)} (${pct((row.fell_through / Math.max(1, row.calls)) * 100)})`,
          style: row.fell_through > 0 ? 'yellow' : undefined,
        },
        { text: row.to.length === 0 ? '-' : row.to.map((to) => `${to.model} ${count(to.calls)}, ${count(to.ok)} ok`).join('; ') },
      ]),
    );
  }
  const gaveUp = chains.busy_gave_up > 0 ? `; ${count(chains.busy_gave_up)} call(s) still ended busy` : '';
  page.say(
    `Busy retries by the server: ${count(chains.busy_retries)} (server_busy / rate_limited / spawn_failed tried again by the server; not failures callers saw)${gaveUp}.`,
  );
}

/** The escalated tasks are listed by `report --json` only: here, how many, and what was left out. */
function escalatedTasksNote({ page }: Context, s: SummaryView): void {
  const more: string[] = [];
  const omitted = s.escalated_tasks_omitted ?? 0;
  if (omitted > 0) more.push(`${count(omitted)} more escalated task(s) not shown`);
  if (s.escalated_tasks_truncated) more.push('only the 1000 most recently active escalated tasks were kept');
  if (s.escalated_tasks.length > 0)
    page.say(`${count(s.escalated_tasks.length)} escalated task(s) in all: report --json lists each (escalated_tasks).`, 'dim');
  if (more.length > 0) page.say(`${more.join('; ')}.`);
}

/** A count, coloured when it is not zero (red for failures, yellow for what deserves a look). */
function countCell(n: number, style: Style = 'red'): Cell {
  return { text: count(n), style: n > 0 ? style : undefined };
}
