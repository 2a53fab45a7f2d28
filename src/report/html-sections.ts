import { count as num, duration, failureStatuses, ownCount, pct, time } from './format.js';
import { html, joinHtml, lines, NONE, swatch, table, th, thFigures, type Html } from './html.js';
import { looksLikeThrash, mostLoadsFirst } from './model-loads.js';
import { bucketWords, type ReportCharts } from './report-charts.js';
import type { ModelLoadRow, RunsSummary } from './summary-schema.js';

// The HTML report's sections after its header, one function each: attention, causes, outcomes,
// latency, tokens, model loads, chains, timeline, escalated tasks.

/** Models (or chains) listed in each table, most runs first; the embedded summary keeps them all. */
export const TABLE_MODELS = 100;
/** Unresolved tasks shown before the "more" fold: the causes below say the rest. */
const ATTENTION_ROWS_OPEN = 10;

type ModelColor = (model: string) => string;
type StatusColor = (status: string) => string;

export function attentionSection(s: RunsSummary, shown: RunsSummary['attention'], colorOfModel: ModelColor): Html {
  const a = s.attention;
  const tasks = shown.tasks;
  const now = Date.parse(s.generated_at);
  const circuits = shown.circuits_open.map((c) => {
    const retry =
      c.retry_at === null
        ? ''
        : Date.parse(c.retry_at) <= now
          ? `; cooldown over at ${time(c.retry_at)} UTC: the next run probes it`
          : `; retry at ${time(c.retry_at)} UTC`;
    return html`<li class="bad">${swatch(colorOfModel(c.model))}Circuit <strong>${c.state === 'half_open' ? 'half-open' : 'open'}</strong>: <span class="model">${c.model}</span>${c.since === null ? '' : ` since ${time(c.since)} UTC`}, ${num(c.consecutive_failures)} failure(s) in a row${retry}${c.last_error === null ? '' : html`<br><span class="error">${c.last_error}</span>`}</li>`;
  });
  const head = [
    ...th('task', 'model', 'reason', 'status', 'escalated (UTC)'),
    ...thFigures('escalations', 'blocked'),
    ...th('last error'),
  ];
  const rows = tasks.map((t) => [
    html`<td class="name">${t.task_id}</td>`,
    modelCell(t.model, colorOfModel),
    html`<td>${t.reason ?? NONE}</td>`,
    html`<td class="status">${t.status}</td>`,
    html`<td class="time">${time(t.escalated_at)}</td>`,
    figureCell(t.escalations),
    countCell(t.blocked, 'bad'),
    html`<td class="error">${t.last_error ?? NONE}</td>`,
  ]);
  const quiet = a.circuits_open.length === 0 && a.tasks_total === 0;
  return html`<section class="card attention${quiet ? ' quiet' : ''}" id="attention">
<h2>Needs attention now</h2>
<p class="note">Judged on every file read, whatever the time window (only rotated files older than the window are left unread): circuits the log last left open (not reset since), and tasks that escalated and were neither reset (<code>ollama_reset</code>) nor answered by a later run.</p>
${quiet ? html`<p class="good">Nothing: no open circuit, no unresolved escalated task.</p>` : ''}
${circuits.length > 0 ? html`<ul class="circuits">${circuits}</ul>` : ''}
${a.circuits_open.length > circuits.length ? html`<p class="note">${num(a.circuits_open.length - circuits.length)} more open circuit(s): <code>report --json</code> lists them.</p>` : ''}
${a.tasks_total > 0 ? html`<p><strong>${num(a.tasks_total)}</strong> task(s) escalated and not resolved${a.blocked_tasks > 0 ? `, ${num(a.blocked_tasks)} of them refused as blocked` : ''}.</p>` : ''}
${tasks.length > 0 ? table('attention-table', head, rows.slice(0, ATTENTION_ROWS_OPEN)) : ''}
${rows.length > ATTENTION_ROWS_OPEN ? html`<details><summary>${num(rows.length - ATTENTION_ROWS_OPEN)} more task(s)</summary>${table('attention-more-table', head, rows.slice(ATTENTION_ROWS_OPEN))}</details>` : ''}
${a.tasks_total > tasks.length ? html`<p class="note">${num(a.tasks_total - tasks.length)} more: <code>report --json</code> lists them.</p>` : ''}
</section>`;
}

export function causesSection(s: RunsSummary, causes: RunsSummary['escalation_causes'], colorOfModel: ModelColor): Html {
  const head = [
    ...thFigures('escalations', 'tasks'),
    ...th('model', 'reason', 'status', 'first - last (UTC)', 'example tasks', 'error'),
  ];
  const rows = causes.map((c) => [
    html`<td class="n warn">${num(c.escalations)}</td>`,
    figureCell(c.tasks),
    modelCell(c.model, colorOfModel),
    html`<td>${c.reason ?? '-'}</td>`,
    html`<td class="status">${c.status}</td>`,
    html`<td class="time">${time(c.first_ts)}<br>${time(c.last_ts)}</td>`,
    html`<td class="name">${c.example_tasks.join(', ')}</td>`,
    html`<td class="error">${c.error ?? '-'}</td>`,
  ]);
  return html`<section class="card" id="causes">
<h2>Escalations by cause${causes.length > 0 ? ` (${num(causes.length)})` : ''}</h2>
<p class="note">One row per model, escalation reason and status, not one per task. Refusals of a task already escalated (<code>blocked</code>) are not a new cause.</p>
${causes.length === 0 ? html`<p class="note">No escalation in this selection.</p>` : table('causes-table', head, rows)}
${s.escalation_causes.length > causes.length ? html`<p class="note">${num(s.escalation_causes.length - causes.length)} more cause(s) with fewer escalations: <code>report --json</code> lists them.</p>` : ''}
${s.escalation_causes_truncated ? html`<p class="note">More than 200 causes: the rest are not listed.</p>` : ''}
</section>`;
}

export function tokensSection(s: RunsSummary, charts: ReportCharts, colorOfModel: ModelColor): Html {
  const chartHeight = (models: number) => Math.max(180, 80 + 30 * models);
  const withTokens = s.models.filter((m) => m.tokens.runs > 0 || m.tokens.may_be_truncated > 0);
  const chart = charts.tokens;
  const head = [
    ...th('model'),
    ...thFigures('runs with usage', 'output tok/s p50', 'prompt tokens p95'),
    ...thFigures('tokens in', 'tokens out', 'cold loads', 'maybe truncated'),
  ];
  const rows = withTokens
    .slice(0, TABLE_MODELS)
    .map((m) => [
      modelCell(m.model, colorOfModel),
      figureCell(m.tokens.runs),
      html`<td class="n">${m.tokens.output_tps_p50 === null ? '-' : m.tokens.output_tps_p50.toFixed(1)}</td>`,
      html`<td class="n">${m.tokens.prompt_tokens_p95 === null ? '-' : num(m.tokens.prompt_tokens_p95)}</td>`,
      figureCell(m.tokens.prompt_tokens),
      figureCell(m.tokens.output_tokens),
      countCell(m.tokens.cold_loads, 'warn'),
      countCell(m.tokens.may_be_truncated, 'bad'),
    ]);
  const body =
    chart === null
      ? html`<p class="empty" data-chart-empty="tokens">No run reported token usage (lines written before schema v2 have none).</p>`
      : html`<div class="pair">
<div class="chart" style="height:${chartHeight(chart.labels.length)}px"><canvas data-chart="tokens" role="img" aria-label="Bar chart: median output tokens per second, per model"></canvas></div>
<div class="chart" style="height:${chartHeight(chart.labels.length)}px"><canvas data-chart="prompt_tokens" role="img" aria-label="Bar chart: 95th percentile of prompt tokens, per model"></canvas></div>
</div>`;
  return html`<section class="card" id="tokens">
<h2>Tokens per model</h2>
<p class="note">From each run's <code>usage</code>. A cold load is a run whose <code>load_ms</code> was over 1 s (the model was loaded first). <em>Maybe truncated</em>: runs warned <code>prompt_may_be_truncated</code> (the prompt filled the context; raise <code>num_ctx</code> or <code>OLLAMA_CONTEXT_LENGTH</code>).</p>
${body}
${withTokens.length > 0 ? table('tokens-table', head, rows) : ''}
</section>`;
}

/** The days x models with the most loads (`shown`, already in that order); thrash in words. */
export function loadsSection(s: RunsSummary, shown: RunsSummary['timeline']['loads'], colorOfModel: ModelColor): Html {
  const loads = s.timeline.loads;
  const total = loads.reduce((sum, row) => sum + row.loads, 0);
  const head = [...th('model', 'day (UTC)'), ...thFigures('loads', 'runs', 'load time')];
  const rows = shown.map((row) => [
    modelCell(row.model, colorOfModel),
    html`<td class="time">${row.day}</td>`,
    html`<td class="n${looksLikeThrash(row) ? ' warn' : ''}">${num(row.loads)}</td>`,
    figureCell(row.runs),
    html`<td class="n">${duration(row.load_ms)}</td>`,
  ]);
  const words = thrashWords(mostLoadsFirst(loads).filter(looksLikeThrash));
  return html`<section class="card" id="loads">
<h2>Model loads per day</h2>
<p class="note"><strong>${num(total)}</strong> load(s): runs that loaded their model (<code>cold_load</code>, or <code>usage.load_ms</code> of 100 ms or more), per UTC day. A model kept loaded between runs loads a few times a day; a load for most runs, many times a day (in <span class="warn">colour</span>), is thrash: models pushing each other out of memory, or runs further apart than the keep-alive.</p>
${words}
${table('loads-table', head, rows)}
${loads.length > shown.length ? html`<p class="note">The table lists the ${num(shown.length)} days x models with the most loads of ${num(loads.length)}; <code>report --json</code> has them all (<code>timeline.loads</code>).</p>` : ''}
${s.timeline.loads_truncated ? html`<p class="note">Only the most recent days are counted.</p>` : ''}
</section>`;
}

/** Runs, loads and failures per Ollama host (OLLAMA_MCP_HOSTS). */
export function hostsSection(s: RunsSummary): Html {
  const hosts = s.hosts ?? [];
  const head = [...th('host'), ...thFigures('runs', 'ok', 'failures', 'unreachable', 'loads')];
  const rows = hosts.map((row) => [
    html`<td>${row.host}</td>`,
    figureCell(row.runs),
    figureCell(row.ok),
    countCell(row.failures, 'warn'),
    countCell(row.unreachable, 'warn'),
    figureCell(row.loads),
  ]);
  return html`<section class="card" id="hosts">
<h2>Ollama hosts</h2>
<p class="note">Per host the attempts were sent to: the callers' runs, those that failed, those that could not reach it (the call went on to another host when one could serve), and the loads of a model there.</p>
${table('hosts-table', head, rows)}
</section>`;
}

/** "qwen2.5-coder:7b loaded 18 times for 18 runs on 2026-11-22", for the first three. */
function thrashWords(thrash: readonly ModelLoadRow[]): Html | '' {
  if (thrash.length === 0) return '';
  const said = thrash.slice(0, 3).map((row) => {
    const runs = `${num(row.runs)} run${row.runs === 1 ? '' : 's'}`;
    return html`<span class="model">${row.model}</span> loaded ${num(row.loads)} times for ${runs} on ${row.day}`;
  });
  const more = thrash.length > 3 ? `; and ${num(thrash.length - 3)} more` : '';
  return html`<p class="warn">${joinHtml(said, '; ')}${more}.</p>`;
}

export function chainsSection(s: RunsSummary, colorOfModel: ModelColor): Html {
  const c = s.chains;
  const fellThrough = s.models.reduce((sum, m) => sum + m.retried.fell_through, 0);
  const head = [...th('first model'), ...thFigures('calls', 'fell through'), ...th('answered by (calls, ok)')];
  const rows = c.rows.slice(0, TABLE_MODELS).map((row) => [
    modelCell(row.first_model, colorOfModel),
    figureCell(row.calls),
    html`<td class="n${row.fell_through > 0 ? ' warn' : ' zero'}">${num(row.fell_through)} (${pct((row.fell_through / Math.max(1, row.calls)) * 100)})</td>`,
    html`<td>${
      row.to.length === 0
        ? '-'
        : joinHtml(
            row.to.map((to) => html`${swatch(colorOfModel(to.model))}${to.model}: ${num(to.calls)}, ${num(to.ok)} ok`),
            '; ',
          )
    }</td>`,
  ]);
  return html`<section class="card" id="chains">
<h2>Fallback chains and busy retries</h2>
<p class="note">What the server retried without the caller seeing a failure: <strong>${num(c.busy_retries)}</strong> busy retr${c.busy_retries === 1 ? 'y' : 'ies'} (<code>server_busy</code> / <code>rate_limited</code> / <code>spawn_failed</code> tried again)${c.busy_gave_up > 0 ? `, ${num(c.busy_gave_up)} call(s) still ended busy` : ''}; <strong>${num(fellThrough)}</strong> fall-through(s) to the next model of a chain. These lines are not counted as the caller's failures.</p>
${c.calls === 0 ? html`<p class="note">No call used a fallback chain.</p>` : table('chains-table', head, rows)}
</section>`;
}

export function outcomesSection(s: RunsSummary, charts: ReportCharts, colorOf: StatusColor, colorOfModel: ModelColor): Html {
  const chart = charts.outcomes!;
  const statuses = failureStatuses(s.models);
  const height = Math.max(200, 110 + 34 * chart.labels.length);
  const shown =
    chart.models_total > chart.labels.length
      ? html`<p class="note">The chart shows the ${chart.labels.length} models with the most runs of ${num(chart.models_total)}.</p>`
      : '';
  const head = [
    ...th('model'),
    ...thFigures('runs'),
    html`<th class="n">${swatch(colorOf('ok'))}ok</th>`,
    ...thFigures('ok %'),
    // Status names break at their underscores, so a day with many kinds of failure still fits the card.
    ...statuses.map((st) => html`<th class="n st">${swatch(colorOf(st))}${joinHtml(st.split('_'), '_<wbr>')}</th>`),
    ...thFigures('escalations', 'circuit openings'),
  ];
  const rows = s.models
    .slice(0, TABLE_MODELS)
    .map((m) => [
      modelCell(m.model, colorOfModel),
      figureCell(m.runs),
      figureCell(m.ok),
      html`<td class="n ${m.ok_pct >= 95 ? 'good' : m.ok_pct >= 80 ? 'warn' : 'bad'}">${pct(m.ok_pct)}</td>`,
      ...statuses.map((st) => countCell(ownCount(m.failures, st), 'bad')),
      countCell(m.escalations, 'warn'),
      countCell(m.circuit_openings, 'warn'),
    ]);
  return html`<section class="card" id="outcomes">
<h2>Outcomes per model</h2>
<p class="note">Every run counts, rejected ones (<code>circuit_open</code>, <code>invalid_input</code>, ...) included. One colour per status, the same in the table.</p>
<div class="chart" style="height:${height}px"><canvas data-chart="outcomes" role="img" aria-label="Stacked bar chart: runs per model by outcome status"></canvas></div>
${shown}
${table('outcomes-table', head, rows)}
${tableNote(s.models.length)}
</section>`;
}

export function latencySection(s: RunsSummary, charts: ReportCharts, colorOfModel: ModelColor): Html {
  const chart = charts.latency;
  const spawned = s.models.filter((m) => m.spawned > 0);
  const body =
    chart === null
      ? html`<p class="empty" data-chart-empty="latency">No selected run spawned a process (all were rejected before starting), so there are no durations to chart.</p>`
      : html`<div class="chart" style="height:360px"><canvas data-chart="latency" role="img" aria-label="Grouped bar chart: spawned runs per duration bucket, one series per model"></canvas></div>
${chart.models_total > chart.series.length ? html`<p class="note">The chart shows the ${chart.series.length} models with the most runs of ${num(chart.models_total)}.</p>` : ''}`;
  const head = [...th('model'), ...thFigures('answers', 'p50', 'p95', 'max', 'queue p50', 'failed attempts', 'time lost')];
  const rows = spawned
    .slice(0, TABLE_MODELS)
    .map((m) => [
      modelCell(m.model, colorOfModel),
      figureCell(m.ok),
      html`<td class="n">${duration(m.ok_duration_ms.p50)}</td>`,
      html`<td class="n">${duration(m.ok_duration_ms.p95)}</td>`,
      html`<td class="n">${duration(m.ok_duration_ms.max)}</td>`,
      html`<td class="n">${duration(m.queue_ms.p50)}</td>`,
      countCell(m.lost_attempts, 'bad'),
      html`<td class="n${m.lost_ms > 0 ? ' bad' : ' zero'}">${m.lost_attempts === 0 ? '-' : duration(m.lost_ms)}</td>`,
    ]);
  return html`<section class="card" id="latency">
<h2>Latency per model</h2>
<p class="note">The chart: runs that spawned a process (<code>duration_ms &gt; 0</code>), by duration from spawn to exit. The table: p50, p95 and max of the runs that <strong>answered</strong> (status ok; within 1%), so killed runs do not pass for slow answers; the time lost to failed attempts (retries by the server included) beside it. Queue p50 is the time waiting for a slot.</p>
${body}
${spawned.length > 0 ? table('latency-table', head, rows) : ''}
${tableNote(spawned.length)}
</section>`;
}

export function timelineSection(s: RunsSummary, charts: ReportCharts): Html {
  const chart = charts.timeline;
  const t = s.timeline;
  const counts = { escalation: 0, circuit_opening: 0 };
  for (const e of t.events) counts[e.kind] += 1;
  const body =
    chart === null
      ? html`<p class="empty" data-chart-empty="timeline">No selected run has a readable time (<code>ts</code>), so there is no timeline.</p>`
      : html`<div class="chart" style="height:380px"><canvas data-chart="timeline" role="img" aria-label="Stacked bar chart of ok and failed runs per time bucket, with markers for escalations and circuit openings"></canvas></div>`;
  return html`<section class="card" id="timeline">
<h2>Runs over time</h2>
<p class="note">${num(t.buckets.length)} bucket${t.buckets.length === 1 ? '' : 's'} of ${bucketWords(t.bucket)}; ${num(counts.escalation)} escalation${counts.escalation === 1 ? '' : 's'} and ${num(counts.circuit_opening)} circuit opening${counts.circuit_opening === 1 ? '' : 's'}, marked on one row, one marker per ${slotWords(chart?.marker_slot_ms ?? 0)} that holds any (<span class="mark open">&#9670;</span> when it holds a circuit opening, else <span class="mark esc">&#9650;</span>). Hover a marker for the time, model, task and reason of each.</p>
${body}
${t.events_truncated ? html`<p class="note">Only the ${num(t.events.length)} most recent events are marked.</p>` : ''}
</section>`;
}

export function escalatedSection(s: RunsSummary, tasks: RunsSummary['escalated_tasks'], colorOf: StatusColor): Html {
  const omitted = s.escalated_tasks.length - tasks.length;
  const notes: Html[] = [];
  if (omitted > 0) notes.push(html`${num(omitted)} more escalated task(s) not listed here: <code>report --json</code> has them.`);
  if (s.escalated_tasks_truncated) notes.push(html`Only the 1000 most recently active escalated tasks were kept.`);
  const head = [
    ...th('task', 'model'),
    ...thFigures('attempts'),
    ...th('last status', 'reason', 'last error', 'last time (UTC)'),
  ];
  const rows = tasks.map((t) => [
    html`<td class="name">${t.task_id}</td>`,
    html`<td class="name">${t.model}</td>`,
    figureCell(t.attempts),
    html`<td class="status">${swatch(colorOf(t.last_status))}${t.last_status}</td>`,
    html`<td>${t.escalation_reason ?? NONE}</td>`,
    html`<td class="error">${t.last_error ?? NONE}</td>`,
    html`<td class="time">${time(t.last_ts)}</td>`,
  ]);
  return html`<section class="card" id="escalated">
<h2>Escalated tasks${tasks.length > 0 ? ` (${num(s.escalated_tasks.length)}, most recent first)` : ''}</h2>
${tasks.length === 0 ? html`<p class="note">No task escalated in this selection.</p>` : html`<details><summary>One row per task (the causes above group them)</summary>${table('escalated-table', head, rows)}</details>`}
${lines(notes.map((n) => html`<p class="note">${n}</p>`))}
</section>`;
}

function modelCell(model: string, colorOfModel: ModelColor): Html {
  return html`<td class="model">${swatch(colorOfModel(model))}${model}</td>`;
}

function figureCell(n: number): Html {
  return html`<td class="n">${num(n)}</td>`;
}

/** A count, coloured when it is not zero (`bad` for failures, `warn` for what deserves a look). */
function countCell(n: number, flag: 'bad' | 'warn'): Html {
  return html`<td class="n${n > 0 ? ` ${flag}` : ' zero'}">${num(n)}</td>`;
}

function tableNote(total: number): Html | '' {
  if (total <= TABLE_MODELS) return '';
  return html`<p class="note">The table lists the ${num(TABLE_MODELS)} models with the most runs of ${num(total)}; the embedded data (<code>#report-summary</code>) and <code>report --json</code> have them all.</p>`;
}

/** `10 minutes`, `1 hour`. */
function slotWords(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes % 60 === 0 && minutes > 0) return `${minutes / 60} hour${minutes === 60 ? '' : 's'}`;
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
