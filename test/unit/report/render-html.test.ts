import { createHash } from 'node:crypto';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadChartLibrary } from '../../../src/report/chart-library.js';
import { escapeHtml, scriptJson } from '../../../src/report/html.js';
import { renderReportHtml } from '../../../src/report/render-html.js';
import { buildReportCharts, STATUS_COLORS } from '../../../src/report/report-charts.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { runsSummarySchema, type RunsSummary } from '../../../src/report/summary-schema.js';
import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { RUNS_FIXTURES } from '../../helpers/run-log-fixtures.js';

const HTML_DIR = join(RUNS_FIXTURES, 'html');
const NOW = new Date('2025-11-23T12:00:00.000Z');
const LIB = '/* stand-in for Chart.js */ window.Chart = function () {};';

const fixture = async (): Promise<RunsSummary> => summarizeRuns(await listRunLogFiles(HTML_DIR), {}, { now: NOW });
const empty = async (dir = join(RUNS_FIXTURES, 'none')): Promise<RunsSummary> =>
  summarizeRuns(await listRunLogFiles(dir), {}, { now: NOW });

/** The content of every `<script>` element, in order, with its type attribute. */
function scripts(html: string): { type: string | null; body: string }[] {
  return [...html.matchAll(/<script( type="([^"]+)")?[^>]*>([\s\S]*?)<\/script>/g)].map((m) => ({
    type: m[2] ?? null,
    body: m[3]!,
  }));
}

function embeddedSummary(html: string): unknown {
  return JSON.parse(scripts(html).find((s) => s.type === 'application/json' && true)!.body);
}

describe('buildReportCharts on test/fixtures/runs/html', () => {
  it('outcomes: one bar per model, ok then each failure status in the failure table order, in the fixed colours', async () => {
    const { outcomes } = buildReportCharts(await fixture());
    expect(outcomes!.labels).toEqual(['qwen3:8b', 'llama3.2:latest', 'deepseek-r1:14b']);
    expect(outcomes!.series.map((s) => [s.key, s.color, s.data])).toEqual([
      ['ok', STATUS_COLORS.ok, [8, 5, 4]],
      ['timeout', STATUS_COLORS.timeout, [2, 0, 0]],
      ['empty_output', STATUS_COLORS.empty_output, [0, 0, 1]],
      ['crashed', STATUS_COLORS.crashed, [0, 3, 0]],
      ['circuit_open', STATUS_COLORS.circuit_open, [0, 1, 0]],
      ['invalid_input', STATUS_COLORS.invalid_input, [0, 0, 1]],
    ]);
  });

  it('latency: the 13 duration buckets, one series per model that spawned', async () => {
    const { latency } = buildReportCharts(await fixture());
    expect(latency!.labels).toEqual([
      '≤100ms',
      '≤250ms',
      '≤500ms',
      '≤1s',
      '≤2.5s',
      '≤5s',
      '≤10s',
      '≤30s',
      '≤1m',
      '≤2m',
      '≤5m',
      '≤10m',
      '>10m',
    ]);
    expect(latency!.ranges[0]).toBe('up to 100ms');
    expect(latency!.ranges[3]).toBe('over 500ms, up to 1s');
    expect(latency!.ranges[12]).toBe('over 10m');
    expect(latency!.series.map((s) => [s.label, s.data])).toEqual([
      ['qwen3:8b', [1, 1, 1, 1, 2, 2, 0, 0, 0, 2, 0, 0, 0]],
      ['llama3.2:latest', [3, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0]],
      ['deepseek-r1:14b', [0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 1]],
    ]);
  });

  it('timeline: 45 five-minute buckets, ticks every 30 minutes on the hour and half hour, the three events', async () => {
    const { timeline } = buildReportCharts(await fixture());
    expect(timeline!.bucket).toBe('5m');
    expect(timeline!.starts_ms).toHaveLength(45);
    expect(timeline!.ok.reduce((a, b) => a + b, 0)).toBe(17);
    expect(timeline!.failed.reduce((a, b) => a + b, 0)).toBe(8);
    expect(timeline!.failed[24]).toBe(4); // 10:00-10:05: three crashes and the circuit_open rejection
    expect(new Date(timeline!.min_ms).toISOString()).toBe('2025-11-23T08:00:00.000Z');
    expect(new Date(timeline!.max_ms).toISOString()).toBe('2025-11-23T11:45:00.000Z');
    expect(timeline!.step_ms).toBe(30 * 60_000);
    expect(timeline!.ticks_ms.map((t) => new Date(t).toISOString().slice(11, 16))).toEqual([
      '08:00',
      '08:30',
      '09:00',
      '09:30',
      '10:00',
      '10:30',
      '11:00',
      '11:30',
    ]);
    expect(timeline!.tick_style).toBe('time');
    expect(timeline!.axis_title).toBe('time (UTC, 2025-11-23); one bar per 5 minutes');
    expect(timeline!.events.map((e) => [new Date(e.ts_ms).toISOString(), e.kind, e.model, e.task_id, e.detail])).toEqual([
      ['2025-11-23T10:04:00.000Z', 'circuit_opening', 'llama3.2:latest', 't-sum', 'opened'],
      ['2025-11-23T10:04:30.000Z', 'escalation', 'llama3.2:latest', 't-sum', 'circuit_open'],
      ['2025-11-23T10:40:00.000Z', 'escalation', 'qwen3:8b', 't-parse', 'max_retries_exceeded'],
    ]);
  });

  it('nothing to draw for an empty log; no latency chart when nothing spawned', async () => {
    expect(buildReportCharts(await empty())).toEqual({ outcomes: null, latency: null, tokens: null, timeline: null });
    const rejected = await summarizeRuns(
      await listRunLogFiles(HTML_DIR),
      { status: ['circuit_open', 'invalid_input'] },
      { now: NOW },
    );
    const charts = buildReportCharts(rejected);
    expect(charts.latency).toBeNull();
    expect(charts.outcomes!.series.map((s) => s.key)).toEqual(['circuit_open', 'invalid_input']); // no ok series when none was ok
  });
});

describe('renderReportHtml', () => {
  it('is one page: header facts, the three chart canvases, the tables, the data and the inlined library', async () => {
    const summary = await fixture();
    const html = renderReportHtml(summary, { chartLibrary: LIB });
    expect(html).toBe(renderReportHtml(summary, { chartLibrary: LIB })); // pure
    expect(html.startsWith('<!doctype html>\n<html lang="en">')).toBe(true);
    expect(html).toContain('<title>Run report: 25 runs, 2025-11-23 08:00:00 to 11:40:00 UTC (3h40m)</title>');
    for (const chart of ['outcomes', 'latency', 'timeline']) expect(html).toContain(`<canvas data-chart="${chart}"`);
    expect(html).toContain('<dt>Files read</dt><dd><code>runs.jsonl</code></dd>');
    expect(html).toContain('<dt>Filters</dt><dd>none</dd>');
    expect(scripts(html).map((s) => s.type)).toEqual(['application/json', 'application/json', null, null]);
    expect(scripts(html)[2]!.body).toBe(LIB);
    expect(embeddedSummary(html)).toEqual(summary);
    expect(html).not.toMatch(/https?:\/\//); // nothing to fetch
  });

  it('forbids every network request and allows exactly its two inline scripts, by hash', async () => {
    const html = renderReportHtml(await fixture(), { chartLibrary: LIB });
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!.replace(/&#39;/g, "'");
    expect(csp).toContain("default-src 'none'");
    const hashes = [...csp.matchAll(/'sha256-([^']+)'/g)].map((m) => m[1]);
    const executable = scripts(html).filter((s) => s.type === null);
    expect(hashes).toEqual(executable.map((s) => createHash('sha256').update(s.body).digest('base64')));
  });

  it('escapes every text from the log, in the tables and in the embedded JSON', async () => {
    const evil = '</script><script>alert(1)</script><!-- & "quoted" \'single\' \u2028';
    const base = await fixture();
    const summary: RunsSummary = {
      ...base,
      filters: { ...base.filters, model: evil },
      models: base.models.map((m, i) => (i === 0 ? { ...m, model: `m${evil}` } : m)),
      escalated_tasks: base.escalated_tasks.map((t) => ({
        ...t,
        task_id: `t${evil}`,
        last_error: `e${evil}`,
        escalation_reason: `r${evil}`,
      })),
    };
    const html = renderReportHtml(summary, { chartLibrary: LIB });
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<!-- &');
    expect(scripts(html)).toHaveLength(4);
    expect(html).toContain(
      't&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!-- &amp; &quot;quoted&quot; &#39;single&#39;',
    );
    expect(embeddedSummary(html)).toEqual(summary); // the \\u escapes read back as the same text
    const charts = JSON.parse(scripts(html)[1]!.body);
    expect(charts.outcomes.labels[0]).toBe(`m${evil}`);
  });

  it('escapeHtml and scriptJson', () => {
    expect(escapeHtml('a<b>&"\'\u0007')).toBe('a&lt;b&gt;&amp;&quot;&#39;?');
    expect(scriptJson({ a: '</script>&\u2028' })).toBe('{"a":"\\u003c/script\\u003e\\u0026\\u2028"}');
  });

  it('inlines a library whose strings contain </script without ending the element', async () => {
    const html = renderReportHtml(await fixture(), { chartLibrary: 'var s = "</script>"; var t = "</SCRIPT >";' });
    expect(scripts(html)[2]!.body).toBe('var s = "<\\/script>"; var t = "<\\/SCRIPT >";');
  });

  it('says "No runs" and draws no chart for an empty log, telling why', async () => {
    const missing = renderReportHtml(await empty(), { chartLibrary: LIB });
    expect(missing).toContain('id="no-runs"');
    expect(missing).toContain('No run log was found in the directory read.');
    expect(missing).not.toContain('<canvas');
    expect(missing).not.toContain('id="escalated"');
    expect(JSON.parse(scripts(missing)[1]!.body)).toEqual({ outcomes: null, latency: null, tokens: null, timeline: null });

    const filtered = await summarizeRuns(await listRunLogFiles(HTML_DIR), { model: 'nope:1b' }, { now: NOW });
    expect(renderReportHtml(filtered, { chartLibrary: LIB })).toContain('No run in the log matches the filters.');

    const calm = await summarizeRuns(await listRunLogFiles(HTML_DIR), { model: 'deepseek-r1:14b' }, { now: NOW });
    const page = renderReportHtml(calm, { chartLibrary: LIB });
    expect(page).toContain('<canvas data-chart="timeline"');
    expect(page).toContain('No task escalated in this selection.');
    expect(page).toContain('<dt>Filters</dt><dd>model deepseek-r1:14b</dd>');
  });

  it('stays under 1.5 MB (without the library) at the summary bounds, listing at most 100 escalated tasks', () => {
    const summary = worstCase();
    runsSummarySchema.parse(summary);
    const html = renderReportHtml(summary, { chartLibrary: LIB });
    expect(html.length - LIB.length).toBeLessThan(1_500_000); // about 1.3 MB
    // header rows + rows: attention (10 shown, 90 folded: two tables), causes (50), outcomes, latency, tokens, loads (100 rows each), chains (100), escalated tasks (100)
    expect(html.match(/<tr>/g)!.length).toBe(2 + 100 + 1 + 50 + 4 * (1 + 100) + 1 + 100 + 1 + 100);
    expect(html).toContain('900 more escalated task(s) not listed here: <code>report --json</code> has them.');
    expect(html).toContain('Only the 1000 most recently active escalated tasks were kept.');
    expect(html).toContain('Only the 200 most recent events are marked.');
    expect(html).toContain('The chart shows the 25 models with the most runs of 500.');
    expect(html).toContain(
      'The table lists the 100 models with the most runs of 500; the embedded data (<code>#report-summary</code>) and <code>report --json</code> have them all.',
    );
    const embedded = embeddedSummary(html) as RunsSummary;
    expect(embedded.escalated_tasks).toHaveLength(100);
    expect(embedded.attention.tasks).toHaveLength(100);
    expect(html).toContain('400 more open circuit(s)');
    expect(html).toContain('150 more cause(s) with fewer escalations');
    expect(embedded.models).toHaveLength(500);
    expect(embedded.timeline.loads).toHaveLength(100); // the rows the loads table shows
    expect(embedded.timeline.loads.every((row) => row.loads > 900)).toBe(true);
    expect(html).toContain('The table lists the 100 days x models with the most loads of 1,000;');
    expect(html).toContain('Only the most recent days are counted.');
  });

  it('shows model loads per day, thrash first and in words, only when something loaded', async () => {
    const base = await fixture();
    expect(renderReportHtml(base, { chartLibrary: LIB })).not.toContain('id="loads"');
    const row = (day: string, model: string, loads: number, runs: number) => ({ day, model, loads, load_ms: loads * 3000, runs });
    const summary: RunsSummary = {
      ...base,
      timeline: {
        ...base.timeline,
        loads: [
          row('2025-11-21', 'qwen3:8b', 1, 20),
          row('2025-11-22', 'qwen3:8b', 18, 18),
          row('2025-11-22', 'evil<script>:1b', 4, 6),
        ],
      },
    };
    runsSummarySchema.parse(summary);
    const html = renderReportHtml(summary, { chartLibrary: LIB });
    const section = html.slice(
      html.indexOf('<section class="card" id="loads">'),
      html.indexOf('<section class="card" id="chains">'),
    );
    expect(section).toContain('<strong>23</strong> load(s)');
    expect(section).toContain(
      '<p class="warn"><span class="model">qwen3:8b</span> loaded 18 times for 18 runs on 2025-11-22; <span class="model">evil&lt;script&gt;:1b</span> loaded 4 times for 6 runs on 2025-11-22.</p>',
    );
    const cells = [...section.matchAll(/<tr>(.*?)<\/tr>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, '|').replace(/\|+/g, '|'));
    expect(cells).toEqual([
      '|model|day (UTC)|loads|runs|load time|',
      '|qwen3:8b|2025-11-22|18|18|54.0s|',
      '|evil&lt;script&gt;:1b|2025-11-22|4|6|12.0s|',
      '|qwen3:8b|2025-11-21|1|20|3.00s|',
    ]);
    expect(section).toContain('<td class="n warn">18</td>');
    expect(section).toContain('<td class="n">1</td>');
    expect(html).not.toContain('evil<script>');
  });

  it('reads the installed Chart.js UMD build, without its source map comment', async () => {
    const library = await loadChartLibrary();
    expect(library).toMatch(/^\/\*!\n \* Chart\.js v4\./);
    expect(library).not.toContain('sourceMappingURL');
    expect(library.length).toBeGreaterThan(100_000);
  });
});

/** A summary at every bound: 500 models with long names, 1000 escalated tasks with 500-character errors, 200 buckets and events. */
function worstCase(): RunsSummary {
  const statuses = ['timeout', 'crashed', 'model_not_found', 'circuit_open', 'invalid_input', 'made_up_status'];
  const start = Date.parse('2025-01-01T00:00:00.000Z');
  const day = 86_400_000;
  return {
    schema: 2,
    generated_at: new Date(start + 201 * day).toISOString(),
    filters: { since: null, model: null, task: null, status: null },
    range: { first_ts: new Date(start).toISOString(), last_ts: new Date(start + 200 * day).toISOString() },
    files: Array.from({ length: 20 }, (_, i) => `runs-2025-01-${String(i + 1).padStart(2, '0')}-001.jsonl`),
    files_skipped: 0,
    total_runs: 500 * 1000,
    total_ok: 500 * 700,
    total_escalations: 5000,
    skipped_lines: 3,
    blank_lines: 1,
    unrecognized_records: 2,
    models_truncated: true,
    escalated_tasks_truncated: true,
    escalations_without_task: 4,
    duration_buckets_ms: [100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000],
    models: Array.from({ length: 500 }, (_, i) => ({
      model: `registry.example/organisation-${i}/a-model-name-that-is-rather-long-${'x'.repeat(100)}:q4_k_m-${i}`,
      runs: 1000,
      ok: 700,
      ok_pct: 70,
      timeouts: 50,
      failures: Object.fromEntries(statuses.map((s) => [s, 50])),
      escalations: 10,
      circuit_openings: 2,
      spawned: 950,
      duration_ms: { p50: 1234, p95: 98765, max: 654321 },
      duration_histogram: [10, 20, 30, 40, 50, 100, 200, 200, 100, 100, 50, 30, 20],
      queue_ms: { p50: 12 },
      ok_duration_ms: { p50: 1000, p95: 9000, max: 20000 },
      lost_ms: 123_456_789,
      lost_attempts: 300,
      retried: { busy_retries: 12, fell_through: 3 },
      tokens: {
        runs: 700,
        output_tokens: 1_234_567,
        prompt_tokens: 2_345_678,
        output_tps_p50: 42.5,
        prompt_tokens_p95: 8190,
        cold_loads: 9,
        may_be_truncated: 4,
      },
    })),
    dirs: ['/home/someone/.local/state/ollama-runner-mcp'],
    attention: {
      circuits_open: Array.from({ length: 500 }, (_, i) => ({
        model: `registry.example/organisation-${i}/model`,
        state: 'open',
        since: new Date(start + i * 60_000).toISOString(),
        consecutive_failures: 5,
        retry_at: new Date(start + i * 60_000 + 600_000).toISOString(),
        last_error: `Error <${i}>: ${'x'.repeat(480)}`,
      })),
      tasks: Array.from({ length: 1000 }, (_, i) => ({
        task_id: `task-${i}-${'t'.repeat(100)}`,
        model: `registry.example/organisation-${i % 500}/model`,
        reason: 'max_retries_exceeded',
        status: 'timeout',
        escalated_at: new Date(start + i * 60_000).toISOString(),
        escalations: 1,
        blocked: i % 2,
        last_error: `Error <${i}>: ${'y'.repeat(480)}`,
      })),
      tasks_total: 5000,
      blocked_tasks: 500,
    },
    escalation_causes: Array.from({ length: 200 }, (_, i) => ({
      model: `registry.example/organisation-${i}/model`,
      reason: 'max_retries_exceeded',
      status: 'timeout',
      escalations: 25,
      tasks: 25,
      first_ts: new Date(start).toISOString(),
      last_ts: new Date(start + i * 60_000).toISOString(),
      example_tasks: [`task-${i}-a`, `task-${i}-b`, `task-${i}-c`],
      error: `Error <${i}>: ${'z'.repeat(480)}`,
    })),
    escalation_causes_truncated: true,
    chains: {
      calls: 1000,
      fell_through: 100,
      rows: Array.from({ length: 500 }, (_, i) => ({
        first_model: `registry.example/organisation-${i}/model`,
        calls: 2,
        fell_through: 1,
        to: [{ model: `registry.example/organisation-${(i + 1) % 500}/model`, calls: 1, ok: 1 }],
      })),
      busy_retries: 20,
      busy_gave_up: 1,
    },
    escalated_tasks: Array.from({ length: 1000 }, (_, i) => ({
      task_id: `task-${i}-${'t'.repeat(100)}`,
      model: `registry.example/organisation-${i % 500}/model`,
      attempts: 4,
      escalations: 1,
      last_status: 'timeout',
      last_error: `Error <${i}>: ${'the model process printed a very long complaint & more; '.repeat(10)}`.slice(0, 500),
      escalation_reason: 'max_retries_exceeded',
      last_ts: new Date(start + i * 60_000).toISOString(),
    })),
    timeline: {
      bucket: '1d',
      bucket_seconds: 86_400,
      buckets: Array.from({ length: 200 }, (_, i) => ({
        start: new Date(start + i * day).toISOString(),
        runs: 2500,
        failures: 750,
        escalations: 25,
      })),
      events: Array.from({ length: 200 }, (_, i) => ({
        ts: new Date(start + i * day + 3_600_000).toISOString(),
        kind: i % 3 === 0 ? ('circuit_opening' as const) : ('escalation' as const),
        model: `registry.example/organisation-${i}/model`,
        task_id: `task-${i}`,
        detail: i % 3 === 0 ? 'opened' : 'max_retries_exceeded',
      })),
      events_truncated: true,
      // The most rows a summary lists: two days of 500 models, each reloaded run after run.
      loads: Array.from({ length: 1000 }, (_, i) => ({
        day: new Date(start + (198 + Math.floor(i / 500)) * day).toISOString().slice(0, 10),
        model: `registry.example/organisation-${i % 500}/model`,
        loads: 1000 - i,
        load_ms: (1000 - i) * 5_000,
        runs: 1000 - i,
      })),
      loads_truncated: true,
    },
  };
}
