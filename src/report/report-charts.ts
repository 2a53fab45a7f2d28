import type { RunStatus } from '../policy/run-status.js';
import { failureStatuses, ownCount } from './format.js';
import type { RunsSummary } from './summary-schema.js';

/**
 * One colour per run status, the same in every chart and table of the report. Statuses outside the
 * list (a newer server's) take {@link EXTRA_COLORS} in order of appearance.
 */
export const STATUS_COLORS: Readonly<Record<RunStatus, string>> = {
  ok: '#2e7d32',
  timeout: '#ef6c00',
  start_timeout: '#ffa726',
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
  spawn_failed: '#90a4ae',
  circuit_open: '#ec407a',
  unsupported_option: '#1e88e5',
  cancelled: '#9e9e9e',
  interrupted: '#795548',
  blocked: '#283593',
  not_started: '#bcaaa4',
  invalid_input: '#00897b',
};
const EXTRA_COLORS = ['#7cb342', '#5c6bc0', '#ffa726', '#8d6e63', '#26a69a', '#ab47bc', '#78909c', '#d4e157'];
/** Tableau 10 without its grey, then Tableau 20's light tones. */
const TABLEAU_10 = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f'];
const TABLEAU_20_LIGHT = ['#a0cbe8', '#ffbe7d', '#8cd17d', '#b6992d', '#86bcb6', '#d37295', '#d4a6c8'];
/**
 * One colour per model, the same in every chart and table of the page, given in the order of the
 * models (most runs first); further models share {@link OTHER_MODEL_COLOR}.
 */
const MODEL_COLORS = [...TABLEAU_10, ...TABLEAU_20_LIGHT];
const OTHER_MODEL_COLOR = '#9e9e9e';
/** Models in the outcomes and tokens charts (most runs first). */
const CHART_MODELS = 25;
/** Models in the latency chart (most runs first, spawned ones only): grouped bars get crowded sooner. */
const LATENCY_MODELS = 8;
/** Event markers at least this many slots apart over the timeline's width: one row, never overlapping. */
const MARKER_SLOTS = 60;
const TIMELINE_COLORS = {
  ok: STATUS_COLORS.ok,
  failed: '#e57373',
  escalation: '#ffb300',
  escalation_border: '#6d4c00',
  circuit_opening: '#4527a0',
};

/** What the page's charts draw, computed from the summary (`null`: nothing to draw, a note instead). */
export interface ReportCharts {
  readonly outcomes: ReturnType<typeof outcomesChart> | null;
  readonly latency: ReturnType<typeof latencyChart>;
  readonly tokens: ReturnType<typeof tokensChart>;
  readonly timeline: ReturnType<typeof timelineChart>;
}

/** A colour per model: the models in the summary's order (most runs first) take {@link MODEL_COLORS} in turn. */
export function modelColors(s: Pick<RunsSummary, 'models'>): (model: string) => string {
  const colors = new Map<string, string>();
  s.models.forEach((m, i) => colors.set(m.model, MODEL_COLORS[i] ?? OTHER_MODEL_COLOR));
  return (model) => colors.get(model) ?? OTHER_MODEL_COLOR;
}

/**
 * The data of the report's charts. Pure. Statuses are in the failure table's order with `ok` first and
 * keep their colour everywhere; charts show at most {@link CHART_MODELS} / {@link LATENCY_MODELS}
 * models (most runs first).
 */
export function buildReportCharts(summary: RunsSummary): ReportCharts {
  if (summary.total_runs === 0 || summary.models.length === 0)
    return { outcomes: null, latency: null, tokens: null, timeline: null };
  const colorOfModel = modelColors(summary);
  return {
    outcomes: outcomesChart(summary),
    latency: latencyChart(summary, colorOfModel),
    tokens: tokensChart(summary, colorOfModel),
    timeline: timelineChart(summary.timeline),
  };
}

/** Stacked bars: one bar per model (`labels`), one series per status that occurred (ok first). */
function outcomesChart(summary: RunsSummary) {
  const colorOf = statusColors(summary);
  const models = summary.models.slice(0, CHART_MODELS);
  const anyOk = summary.models.some((m) => m.ok > 0);
  const series = [
    ...(anyOk ? [{ key: 'ok', label: 'ok', color: colorOf('ok'), data: models.map((m) => m.ok) }] : []),
    ...failureStatuses(summary.models).map((status) => ({
      key: status,
      label: status,
      color: colorOf(status),
      data: models.map((m) => ownCount(m.failures, status)),
    })),
  ];
  return { labels: models.map((m) => m.model), series, models_total: summary.models.length };
}

/** Grouped bars: one group per duration bucket (`labels`, `ranges` in words for tooltips), one series per model that spawned a run. */
function latencyChart(summary: RunsSummary, colorOfModel: (model: string) => string) {
  const spawnedModels = summary.models.filter((m) => m.spawned > 0);
  if (spawnedModels.length === 0) return null;
  const bounds = summary.duration_buckets_ms;
  const last = shortDuration(bounds[bounds.length - 1] ?? 0);
  return {
    labels: [...bounds.map((b) => `\u2264${shortDuration(b)}`), `>${last}`],
    ranges: [
      ...bounds.map((b, i) =>
        i === 0 ? `up to ${shortDuration(b)}` : `over ${shortDuration(bounds[i - 1]!)}, up to ${shortDuration(b)}`,
      ),
      `over ${last}`,
    ],
    series: spawnedModels
      .slice(0, LATENCY_MODELS)
      .map((m) => ({ key: m.model, label: m.model, color: colorOfModel(m.model), data: m.duration_histogram })),
    models_total: spawnedModels.length,
  };
}

/** One bar per model (`labels`): median output tokens per second, and the 95th percentile of prompt tokens. */
function tokensChart(summary: RunsSummary, colorOfModel: (model: string) => string) {
  const models = summary.models.filter((m) => m.tokens.runs > 0).slice(0, CHART_MODELS);
  if (models.length === 0) return null;
  return {
    labels: models.map((m) => m.model),
    colors: models.map((m) => colorOfModel(m.model)),
    output_tps_p50: models.map((m) => m.tokens.output_tps_p50),
    prompt_tokens_p95: models.map((m) => m.tokens.prompt_tokens_p95),
    cold_loads: models.map((m) => m.tokens.cold_loads),
    may_be_truncated: models.map((m) => m.tokens.may_be_truncated),
  };
}

/**
 * Stacked bars of ok and failed runs per bucket, and event markers on one row: the events are
 * gathered into slots of `marker_slot_ms` (at least a bucket, at most 60 over the range), one
 * marker per slot at its middle. The x axis runs from the first bucket's start to the last one's
 * end, with ticks at `ticks_ms` (every `step_ms`, aligned to UTC).
 */
function timelineChart(timeline: RunsSummary['timeline']) {
  if (timeline.buckets.length === 0) return null;
  const bucketMs = timeline.bucket_seconds * 1000;
  const starts = timeline.buckets.map((b) => Date.parse(b.start));
  const min = starts[0]!;
  const max = starts[starts.length - 1]! + bucketMs;
  const slotMs = bucketMs * Math.max(1, Math.ceil((max - min) / MARKER_SLOTS / bucketMs));
  const step = tickStep(max - min, bucketMs);
  const firstDay = new Date(min).toISOString().slice(0, 10);
  const lastDay = new Date(max - 1).toISOString().slice(0, 10);
  const tickStyle = step >= DAY_MS ? 'date' : firstDay === lastDay ? 'time' : 'day-time';
  return {
    bucket: timeline.bucket,
    bucket_ms: bucketMs,
    starts_ms: starts,
    ok: timeline.buckets.map((b) => b.runs - b.failures),
    failed: timeline.buckets.map((b) => b.failures),
    events: timeline.events.map(({ ts, ...event }) => ({ ts_ms: Date.parse(ts), ...event })),
    marker_slot_ms: slotMs,
    markers: timelineMarkers(timeline.events, min, slotMs),
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

const MARKER_LINES = 8;

/**
 * One marker per slot that holds events: a diamond when it holds a circuit opening, else a triangle;
 * its tooltip lines are the first 8 events (`HH:MM:SS model task (detail)`), then `... N more`.
 */
function timelineMarkers(events: RunsSummary['timeline']['events'], min: number, slotMs: number) {
  const slots = new Map<number, RunsSummary['timeline']['events'][number][]>();
  for (const e of events) {
    const slot = Math.floor((Date.parse(e.ts) - min) / slotMs);
    const list = slots.get(slot) ?? [];
    list.push(e);
    slots.set(slot, list);
  }
  return [...slots.entries()]
    .sort(([a], [b]) => a - b)
    .map(([slot, list]) => {
      const openings = list.filter((e) => e.kind === 'circuit_opening').length;
      const lines = list
        .slice(0, MARKER_LINES)
        .map(
          (e) =>
            `${e.ts.slice(11, 19)} ${e.kind === 'circuit_opening' ? 'circuit opened' : 'escalation'}: ${e.model}${e.task_id === null ? '' : `, task ${e.task_id}`}${e.detail === null ? '' : ` (${e.detail})`}`,
        );
      if (list.length > MARKER_LINES) lines.push(`... ${list.length - MARKER_LINES} more`);
      return {
        x_ms: min + (slot + 0.5) * slotMs,
        kind: openings > 0 ? ('circuit_opening' as const) : ('escalation' as const),
        escalations: list.length - openings,
        circuit_openings: openings,
        lines,
        models: [...new Set(list.map((e) => e.model))],
      };
    });
}

/** A colour per status: the fixed one, or the next extra colour for a status the list does not know. */
export function statusColors(s: RunsSummary): (status: string) => string {
  const unknown = failureStatuses(s.models).filter((status) => !(status in STATUS_COLORS));
  const extra = new Map(unknown.map((status, i) => [status, EXTRA_COLORS[i % EXTRA_COLORS.length]!]));
  return (status) =>
    (Object.hasOwn(STATUS_COLORS, status) ? (STATUS_COLORS as Record<string, string>)[status] : undefined) ??
    extra.get(status) ??
    '#757575';
}

/** A bucket bound for an axis: `100ms`, `2.5s`, `1m`, `10m`. */
function shortDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${ms / 1000}s`;
  if (ms < 3_600_000) return `${ms / 60_000}m`;
  return `${ms / 3_600_000}h`;
}

/** `5m` -> `5 minutes`. */
export function bucketWords(bucket: string): string {
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
