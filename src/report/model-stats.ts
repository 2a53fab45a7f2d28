import { BUSY_STATUSES } from '../policy/busy-backoff.js';
import { compareStatuses, compareText } from './format.js';
import { DURATION_BUCKETS_MS, durationBucketIndex, LogHistogram, roundMs } from './histogram.js';
import type { RunLine } from './run-line.js';
import type { ModelSummary } from './summary-schema.js';

/** A run whose `usage.load_ms` is above this loaded the model (a cold start); a warm one takes a few ms. */
const COLD_LOAD_MS = 1000;

/** Row name that collects the runs of models past the limit of rows. */
const OTHER_MODELS = '(other)';

/** Distinct failure statuses kept per model; further ones are counted under `(other)`. */
const MAX_STATUSES = 64;
const OTHER_STATUSES = '(other)';

/** One model's row of the summary: counters and histograms, fed one run line at a time. */
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

  /** A selected run line; those the server retried (will_retry) count only in lost time, tokens, openings and `retried`. */
  add(line: RunLine): void {
    const ok = line.status === 'ok';
    if (line.opening !== null) this.openings += 1;
    if (!ok && line.spawnedMs !== null) {
      this.lostMs += line.spawnedMs;
      this.lostAttempts += 1;
    }
    if (line.usage !== null) this.#addUsage(line.usage);
    if (line.mayBeTruncated) this.mayBeTruncated += 1;
    if (line.willRetry) {
      if (BUSY_STATUSES.has(line.status)) this.busyRetries += 1;
      else this.fellThrough += 1;
      return;
    }
    this.runs += 1;
    if (ok) this.ok += 1;
    else this.#addFailure(line.status);
    if (line.escalate) this.escalations += 1;
    if (line.spawnedMs !== null) this.#addSpawned(line.spawnedMs, ok, line.queueMs);
  }

  #addFailure(status: string): void {
    // Statuses are a short list; a log full of made-up ones must not grow this without bound.
    const kind = this.failures.size < MAX_STATUSES || this.failures.has(status) ? status : OTHER_STATUSES;
    this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
  }

  #addSpawned(durationMs: number, ok: boolean, queueMs: number | null): void {
    if (ok) this.okDuration.add(durationMs);
    this.spawned += 1;
    this.duration.add(durationMs);
    this.durationCounts[durationBucketIndex(durationMs)]! += 1;
    if (queueMs !== null) this.queue.add(queueMs);
  }

  #addUsage(usage: Readonly<Record<string, unknown>>): void {
    const { output_tokens: output, prompt_tokens: prompt, tokens_per_second: tps, load_ms: load } = usage;
    if (typeof output === 'number' && output >= 0) {
      this.tokenRuns += 1;
      this.outputTokens += output;
      if (typeof tps === 'number' && tps > 0) this.outputTps.add(tps);
    }
    if (typeof prompt === 'number' && prompt >= 0) {
      this.promptTokens += prompt;
      this.promptTokensHist.add(prompt);
    }
    if (typeof load === 'number' && load > COLD_LOAD_MS) this.coldLoads += 1;
  }

  result(): ModelSummary {
    return {
      model: this.model,
      runs: this.runs,
      ok: this.ok,
      ok_pct: this.runs === 0 ? 0 : Math.round((this.ok / this.runs) * 1000) / 10,
      timeouts: this.failures.get('timeout') ?? 0,
      failures: this.#failuresResult(),
      escalations: this.escalations,
      circuit_openings: this.openings,
      spawned: this.spawned,
      duration_ms: percentiles(this.duration),
      duration_histogram: [...this.durationCounts],
      queue_ms: { p50: roundMs(this.queue.quantile(0.5)) },
      ok_duration_ms: percentiles(this.okDuration),
      lost_ms: Math.round(this.lostMs),
      lost_attempts: this.lostAttempts,
      retried: { busy_retries: this.busyRetries, fell_through: this.fellThrough },
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

  #failuresResult(): Record<string, number> {
    // No prototype: a status read from the log (`constructor`...) is an ordinary key.
    const failures = Object.create(null) as Record<string, number>;
    for (const status of [...this.failures.keys()].sort(compareStatuses)) failures[status] = this.failures.get(status)!;
    return failures;
  }
}

/** The rows per model, at most `maxModels`: the runs of further models go to the `(other)` row. */
export class ModelRows {
  readonly #rows = new Map<string, ModelStats>();
  #truncated = false;

  constructor(readonly maxModels: number) {}

  /** Counts the line in its model's row; returns the row's name (`(other)` past the limit). */
  add(line: RunLine): string {
    let key = line.model;
    let stats = this.#rows.get(key);
    if (stats === undefined && this.#rows.size >= this.maxModels && key !== OTHER_MODELS) {
      this.#truncated = true;
      key = OTHER_MODELS;
      stats = this.#rows.get(key);
    }
    if (stats === undefined) {
      stats = new ModelStats(key);
      this.#rows.set(key, stats);
    }
    stats.add(line);
    return key;
  }

  /** The rows, most runs first, then by name; whether more models than `maxModels` were seen. */
  result(): { rows: ModelSummary[]; truncated: boolean } {
    const rows = [...this.#rows.values()].map((stats) => stats.result());
    return { rows: rows.sort((a, b) => b.runs - a.runs || compareText(a.model, b.model)), truncated: this.#truncated };
  }
}

function percentiles(histogram: LogHistogram): ModelSummary['duration_ms'] {
  return { p50: roundMs(histogram.quantile(0.5)), p95: roundMs(histogram.quantile(0.95)), max: histogram.max };
}

function round2(value: number | null): number | null {
  return value === null ? null : Math.round(value * 100) / 100;
}
