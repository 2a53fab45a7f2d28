import { basename, dirname } from 'node:path';

import { canonicalModelName, modelKeyOf } from '../ollama/model-name.js';
import { RUN_STATUSES } from '../policy/run-status.js';
import { createRecordParser, type SelectedFields } from '../telemetry/fast-record-parser.js';
import type { SkipReason } from '../telemetry/jsonl-reader.js';
import type { RunFilters } from './filters.js';
import { DURATION_BUCKETS_MS, durationBucketIndex, LogHistogram, roundMs } from './histogram.js';
import { parseIsoTime } from './iso-time.js';
import { forEachJsonLine } from './json-lines.js';
import { AttentionTracker } from './attention.js';
import { ChainAccumulator, BUSY_STATUSES } from './chains.js';
import { EscalationCauses } from './escalation-causes.js';
import { RecentCounts } from './recent-counts.js';
import type { EscalatedTask, ModelSummary, RunsSummary } from './summary-schema.js';
import { SUMMARY_SCHEMA_VERSION } from './summary-version.js';
import { TimelineAccumulator } from './timeline.js';

/** The bounds that keep a summary's memory constant whatever the size of the log. */
export interface SummaryLimits {
  /** Distinct models with their own row; runs of further models are counted under `(other)`. @default 500 */
  readonly maxModels: number;
  /** Escalated tasks kept (the most recently active); past it `escalated_tasks_truncated` is true. @default 1000 */
  readonly maxEscalatedTasks: number;
  /** Tasks not (yet) escalated whose attempt count is remembered (the most recently seen). @default 100000 */
  readonly maxTrackedTasks: number;
  /** Timeline buckets at most. @default 200 */
  readonly maxBuckets: number;
  /** Timeline events kept (the most recent). @default 200 */
  readonly maxEvents: number;
}

export const DEFAULT_SUMMARY_LIMITS: SummaryLimits = {
  maxModels: 500,
  maxEscalatedTasks: 1000,
  maxTrackedTasks: 100_000,
  maxBuckets: 200,
  maxEvents: 200,
};

/** Options of {@link summarizeRuns}. */
export interface SummarizeOptions {
  /** The summary's `generated_at`. @default new Date() */
  readonly now?: Date;
  /** Override the memory bounds (tests use small ones). */
  readonly limits?: Partial<SummaryLimits>;
  /**
   * The telemetry directories the files come from, for the summary's `dirs`. With more than one,
   * files are named by their full path and lines are taken as out of `ts` order across files.
   * @default the directories of `files`
   */
  readonly dirs?: readonly string[];
}

/** A run whose `usage.load_ms` is above this loaded the model (a cold start); a warm one takes a few ms. */
export const COLD_LOAD_MS = 1000;

/** `record[key]` for a key read from the log: only the record's own entries count. */
export function ownCount(record: Readonly<Record<string, number>>, key: string): number {
  return Object.hasOwn(record, key) ? (record[key] ?? 0) : 0;
}

/** Row name that collects the runs of models past {@link SummaryLimits.maxModels}. */
export const OTHER_MODELS = '(other)';

/** Distinct failure statuses kept per model; further ones are counted under `(other)`. */
const MAX_STATUSES = 64;
const OTHER_STATUSES = '(other)';
const OPENING_TRANSITIONS = new Set(['opened', 'reopened']);
const STATUS_ORDER = new Map<string, number>(RUN_STATUSES.map((status, index) => [status, index]));
/** The fields `onRecord` reads, the only ones parsed (reading another does not compile: add it here). */
export const SUMMARY_FIELDS = [
  'kind',
  'model',
  'status',
  'ts',
  'task_id',
  'escalate',
  'circuit',
  'duration_ms',
  'queue_ms',
  'escalation_reason',
  'error',
  'retry_count',
  'action',
  'chain_id',
  'usage',
  'busy_try',
  'will_retry',
  'warnings',
] as const;
// `ts` is read once (parseTs) and never kept: it need not be copied out of the line.
const parseSummaryLine = createRecordParser(SUMMARY_FIELDS, ['ts']);

class ModelStats {
  runs = 0;
  ok = 0;
  escalations = 0;
  openings = 0;
  spawned = 0;
  readonly failures = new Map<string, number>();
  readonly duration = new LogHistogram();
  readonly queue = new LogHistogram();
  /** Spawned runs per fixed duration bucket (DURATION_BUCKETS_MS, then one for longer). */
  readonly durationCounts: number[] = new Array<number>(DURATION_BUCKETS_MS.length + 1).fill(0);
  readonly okDuration = new LogHistogram();
  lostMs = 0;
  lostAttempts = 0;
  busyRetries = 0;
  fellThrough = 0;
  tokenRuns = 0;
  outputTokens = 0;
  promptTokens = 0;
  readonly outputTps = new LogHistogram();
  readonly promptTokensHist = new LogHistogram();
  coldLoads = 0;
  mayBeTruncated = 0;

  constructor(readonly model: string) {}

  result(): ModelSummary {
    // No prototype: a status read from the log (`constructor`...) is an ordinary key.
    const failures = Object.create(null) as Record<string, number>;
    for (const status of [...this.failures.keys()].sort(compareStatuses)) failures[status] = this.failures.get(status)!;
    return {
      model: this.model,
      runs: this.runs,
      ok: this.ok,
      ok_pct: this.runs === 0 ? 0 : Math.round((this.ok / this.runs) * 1000) / 10,
      timeouts: this.failures.get('timeout') ?? 0,
      failures,
      escalations: this.escalations,
      circuit_openings: this.openings,
      spawned: this.spawned,
      duration_ms: {
        p50: roundMs(this.duration.quantile(0.5)),
        p95: roundMs(this.duration.quantile(0.95)),
        max: this.duration.max,
      },
      duration_histogram: [...this.durationCounts],
      queue_ms: { p50: roundMs(this.queue.quantile(0.5)) },
      ok_duration_ms: {
        p50: roundMs(this.okDuration.quantile(0.5)),
        p95: roundMs(this.okDuration.quantile(0.95)),
        max: this.okDuration.max,
      },
      lost_ms: Math.round(this.lostMs),
      lost_attempts: this.lostAttempts,
      absorbed: { busy_retries: this.busyRetries, fell_through: this.fellThrough },
      tokens: {
        runs: this.tokenRuns,
        output_tokens: this.outputTokens,
        prompt_tokens: this.promptTokens,
        output_tps_p50: round2(this.outputTps.quantile(0.5)),
        prompt_tokens_p95: roundMs(this.promptTokensHist.quantile(0.95)),
        cold_loads: this.coldLoads,
        may_be_truncated: this.mayBeTruncated,
      },
    };
  }
}

interface TaskEntry {
  model: string;
  attempts: number;
  escalations: number;
  lastStatus: string;
  lastError: string | null;
  reason: string | null;
  lastTsMs: number;
}

/**
 * Summarizes run logs, streaming each file in the order given, in bounded memory whatever their
 * size (see {@link SummaryLimits}; percentiles within 1%, see {@link LogHistogram}).
 *
 * Records are taken as they are: a missing or mistyped field counts as absent, a JSON object
 * without a string `model` and `status` is not a run (`unrecognized_records`), and torn and blank
 * lines are counted, not errors. A missing file reads as empty; another I/O error rejects.
 *
 * @param files paths, oldest first (see `listRunLogFiles`)
 */
export async function summarizeRuns(
  files: readonly string[],
  filters: RunFilters = {},
  options: SummarizeOptions = {},
): Promise<RunsSummary> {
  const now = options.now ?? new Date();
  const limits: SummaryLimits = { ...DEFAULT_SUMMARY_LIMITS, ...options.limits };

  const sinceMs = filters.since?.getTime();
  const statusFilter =
    filters.status === undefined ? undefined : new Set(typeof filters.status === 'string' ? [filters.status] : filters.status);
  const taskFilter = filters.task;
  const modelFilter = filters.model;
  const modelFilterKey = modelFilter === undefined ? undefined : canonicalModelName(modelFilter);

  const models = new Map<string, ModelStats>();
  let modelsTruncated = false;
  const keyCache = new Map<string, string>();
  const modelKey = (name: string): string => {
    let key = keyCache.get(name);
    if (key === undefined) {
      key = modelKeyOf(name); // only real model names are canonicalized; invalid input stays as logged
      if (keyCache.size < 10_000) keyCache.set(name, key);
    }
    return key;
  };

  const trackedTasks = new RecentCounts(limits.maxTrackedTasks); // task_id -> attempts, for tasks not escalated
  const escalated = new Map<string, TaskEntry>();
  let escalatedTruncated = false;
  /** Keeps the maxEscalatedTasks most recently active escalated tasks (by ts); amortized O(1) per record. */
  const pruneEscalated = (): void => {
    if (escalated.size <= limits.maxEscalatedTasks) return;
    const keep = [...escalated.entries()]
      .sort(([, a], [, b]) => newestFirst(a.lastTsMs, b.lastTsMs))
      .slice(0, limits.maxEscalatedTasks);
    escalated.clear();
    for (const [taskId, entry] of keep) escalated.set(taskId, entry);
    escalatedTruncated = true;
  };
  let escalationsWithoutTask = 0;

  const fileDirs = [...new Set(files.map((file) => dirname(file)))];
  const dirs = options.dirs ?? fileDirs;
  const severalDirs = dirs.length > 1;
  const attention = new AttentionTracker(severalDirs);
  const causes = new EscalationCauses();
  const chains = new ChainAccumulator();

  const timeline = new TimelineAccumulator({ maxBuckets: limits.maxBuckets, maxEvents: limits.maxEvents });
  let firstMs = Infinity;
  let lastMs = -Infinity;
  let totalRuns = 0;
  let totalOk = 0;
  let totalEscalations = 0;
  let skipped = 0;
  let blank = 0;
  let unrecognized = 0;

  const onRecord = (rec: SelectedFields<(typeof SUMMARY_FIELDS)[number]>): void => {
    if (rec.kind === 'control') {
      // A reset or status look-up logged beside the runs, not a run: a reset settles what needed attention.
      const taskId = typeof rec.task_id === 'string' && rec.task_id !== '' ? rec.task_id : null;
      const model = typeof rec.model === 'string' && rec.model !== '' ? modelKey(rec.model) : null;
      if (taskFilter !== undefined && taskId !== taskFilter) return;
      if (modelFilter !== undefined && model !== null && model !== modelFilterKey) return;
      attention.control(rec.action, taskId, model, typeof rec.ts === 'string' ? parseTs(rec.ts) : NaN);
      return;
    }
    const rawModel = rec.model;
    const status = rec.status;
    if (typeof rawModel !== 'string' || rawModel === '' || typeof status !== 'string' || status === '') {
      unrecognized += 1;
      return;
    }
    const tsMs = typeof rec.ts === 'string' ? parseTs(rec.ts) : NaN;
    const taskId = typeof rec.task_id === 'string' && rec.task_id !== '' ? rec.task_id : null;
    if (taskFilter !== undefined && taskId !== taskFilter) return;
    let key = modelKey(rawModel);
    if (modelFilter !== undefined && rawModel !== modelFilter && key !== modelFilterKey) return;
    const escalate = rec.escalate === true;
    const error = typeof rec.error === 'string' ? rec.error : null;
    const reason = typeof rec.escalation_reason === 'string' ? rec.escalation_reason : null;
    // The server went on after this line (a busy retry, the next model of a chain): the caller never saw it.
    const absorbed = rec.will_retry === true;
    // What needs attention now is judged on the whole log, whatever the window and statuses asked for.
    attention.run(key, taskId, status, tsMs, escalate, reason, rec.circuit, error, !absorbed);
    if (sinceMs !== undefined && !(tsMs >= sinceMs)) return;
    if (statusFilter !== undefined && !statusFilter.has(status)) return;

    let stats = models.get(key);
    if (stats === undefined) {
      if (models.size >= limits.maxModels && key !== OTHER_MODELS) {
        modelsTruncated = true;
        key = OTHER_MODELS;
        stats = models.get(key);
      }
      if (stats === undefined) {
        stats = new ModelStats(key);
        models.set(key, stats);
      }
    }

    const ok = status === 'ok';
    const circuit = rec.circuit;
    const transition =
      typeof circuit === 'object' && circuit !== null ? (circuit as Record<string, unknown>).transition : undefined;
    const opening = typeof transition === 'string' && OPENING_TRANSITIONS.has(transition);
    const hasTs = Number.isFinite(tsMs);
    const duration = rec.duration_ms;
    const spawned = typeof duration === 'number' && duration > 0;
    if (opening) stats.openings += 1;
    if (!ok && spawned) {
      stats.lostMs += duration;
      stats.lostAttempts += 1;
    }
    const usage = rec.usage;
    if (typeof usage === 'object' && usage !== null) addUsage(stats, usage as Record<string, unknown>);
    const warnings = rec.warnings;
    if (Array.isArray(warnings) && warnings.length > 0 && warnings.some(isTruncationWarning)) stats.mayBeTruncated += 1;
    chains.add(rec.chain_id, key, status, absorbed, rec.busy_try);
    if (absorbed) {
      if (BUSY_STATUSES.has(status)) stats.busyRetries += 1;
      else stats.fellThrough += 1;
      return;
    }

    totalRuns += 1;
    stats.runs += 1;
    if (ok) {
      totalOk += 1;
      stats.ok += 1;
    } else {
      // Statuses are a short list; a log full of made-up ones must not grow this without bound.
      const kind = stats.failures.size < MAX_STATUSES || stats.failures.has(status) ? status : OTHER_STATUSES;
      stats.failures.set(kind, (stats.failures.get(kind) ?? 0) + 1);
    }
    if (escalate) {
      totalEscalations += 1;
      stats.escalations += 1;
      causes.add(key, reason, status, taskId, tsMs, error);
    }
    if (spawned) {
      if (ok) stats.okDuration.add(duration);
      stats.spawned += 1;
      stats.duration.add(duration);
      stats.durationCounts[durationBucketIndex(duration)]! += 1;
      const queue = rec.queue_ms;
      if (typeof queue === 'number') stats.queue.add(queue);
    }

    if (hasTs) {
      if (tsMs < firstMs) firstMs = tsMs;
      if (tsMs > lastMs) lastMs = tsMs;
      timeline.addRun(tsMs, !ok, escalate);
      if (escalate) timeline.addEvent({ tsMs, kind: 'escalation', model: key, task_id: taskId, detail: reason });
      if (opening)
        timeline.addEvent({ tsMs, kind: 'circuit_opening', model: key, task_id: taskId, detail: transition as string });
    }

    // Tasks: attempt counts for the most recently seen ones; full rows only for escalated ones.
    if (taskId === null) {
      if (escalate) escalationsWithoutTask += 1;
      return;
    }
    let entry = escalated.get(taskId);
    if (entry === undefined && !escalate) {
      trackedTasks.increment(taskId);
      return;
    }
    if (entry === undefined) {
      const seen = trackedTasks.take(taskId);
      const retryCount = typeof rec.retry_count === 'number' && rec.retry_count >= 0 ? rec.retry_count : 0;
      entry = {
        model: key,
        attempts: Math.max(seen + 1, retryCount + 1),
        escalations: 1,
        lastStatus: status,
        lastError: ok ? null : error,
        reason: typeof rec.escalation_reason === 'string' ? rec.escalation_reason : null,
        lastTsMs: hasTs ? tsMs : -Infinity,
      };
      escalated.set(taskId, entry);
      if (escalated.size >= 2 * limits.maxEscalatedTasks) pruneEscalated();
      return;
    }
    entry.attempts += 1;
    if (escalate) {
      entry.escalations += 1;
      entry.reason = typeof rec.escalation_reason === 'string' ? rec.escalation_reason : null;
    }
    // Lines from several processes are nearly, not exactly, in time order: an older line does not
    // replace what a newer one said.
    if (!hasTs || tsMs >= entry.lastTsMs) {
      entry.model = key;
      entry.lastStatus = status;
      if (!ok && error !== null) entry.lastError = error;
      if (hasTs) entry.lastTsMs = tsMs;
    }
  };

  const onSkip = (reason: SkipReason): void => {
    if (reason === 'blank') blank += 1;
    else skipped += 1;
  };
  for (const file of files) await forEachJsonLine(file, onRecord, onSkip, parseSummaryLine);

  pruneEscalated();
  const modelRows = [...models.values()]
    .map((stats) => stats.result())
    .sort((a, b) => b.runs - a.runs || compareText(a.model, b.model));
  const escalatedRows: EscalatedTask[] = [...escalated.entries()]
    .map(([taskId, e]) => ({
      task_id: taskId,
      model: e.model,
      attempts: e.attempts,
      escalations: e.escalations,
      last_status: e.lastStatus,
      last_error: e.lastError,
      escalation_reason: e.reason,
      last_ts: Number.isFinite(e.lastTsMs) ? new Date(e.lastTsMs).toISOString() : null,
      sortKey: e.lastTsMs,
    }))
    .sort((a, b) => newestFirst(a.sortKey, b.sortKey) || compareText(a.task_id, b.task_id))
    .map(({ sortKey: _sortKey, ...row }) => row);

  return {
    schema: SUMMARY_SCHEMA_VERSION,
    generated_at: now.toISOString(),
    filters: {
      since: filters.since?.toISOString() ?? null,
      model: modelFilter ?? null,
      task: taskFilter ?? null,
      status: statusFilter === undefined ? null : [...statusFilter],
    },
    range: {
      first_ts: totalRuns > 0 && Number.isFinite(firstMs) ? new Date(firstMs).toISOString() : null,
      last_ts: totalRuns > 0 && Number.isFinite(lastMs) ? new Date(lastMs).toISOString() : null,
    },
    files: files.map((file) => (severalDirs ? file : basename(file))),
    total_runs: totalRuns,
    total_ok: totalOk,
    total_escalations: totalEscalations,
    skipped_lines: skipped,
    blank_lines: blank,
    unrecognized_records: unrecognized,
    models_truncated: modelsTruncated,
    escalated_tasks_truncated: escalatedTruncated,
    escalations_without_task: escalationsWithoutTask,
    dirs: [...dirs],
    attention: attention.result(),
    escalation_causes: causes.result(),
    escalation_causes_truncated: causes.truncated,
    chains: chains.result(),
    duration_buckets_ms: [...DURATION_BUCKETS_MS],
    models: modelRows,
    escalated_tasks: escalatedRows,
    timeline: timeline.result(),
  };
}

function addUsage(stats: ModelStats, usage: Record<string, unknown>): void {
  const output = usage.output_tokens;
  const prompt = usage.prompt_tokens;
  if (typeof output === 'number' && output >= 0) {
    stats.tokenRuns += 1;
    stats.outputTokens += output;
    const tps = usage.tokens_per_second;
    if (typeof tps === 'number' && tps > 0) stats.outputTps.add(tps);
  }
  if (typeof prompt === 'number' && prompt >= 0) {
    stats.promptTokens += prompt;
    stats.promptTokensHist.add(prompt);
  }
  const load = usage.load_ms;
  if (typeof load === 'number' && load > COLD_LOAD_MS) stats.coldLoads += 1;
}

function isTruncationWarning(w: unknown): boolean {
  return typeof w === 'object' && w !== null && (w as Record<string, unknown>).kind === 'prompt_may_be_truncated';
}

function round2(value: number | null): number | null {
  return value === null ? null : Math.round(value * 100) / 100;
}

/** The README's status order (RUN_STATUSES), then unknown statuses by name. */
export function compareStatuses(a: string, b: string): number {
  const ia = STATUS_ORDER.get(a) ?? Infinity;
  const ib = STATUS_ORDER.get(b) ?? Infinity;
  if (ia !== ib) return ia < ib ? -1 : 1;
  return compareText(a, b);
}

/** Latest `ts` taken as real: 9999-12-31T23:59:59.999Z. */
const MAX_TS_MS = 253_402_300_799_999;

/** Epoch milliseconds of a record's `ts`, or NaN when it is not a time from 1970 to 9999 (treated as absent). */
function parseTs(text: string): number {
  const ms = parseIsoTime(text);
  return ms >= 0 && ms <= MAX_TS_MS ? ms : NaN;
}

/** Descending, with -Infinity (no ts) last. */
function newestFirst(a: number, b: number): number {
  return a > b ? -1 : a < b ? 1 : 0;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
