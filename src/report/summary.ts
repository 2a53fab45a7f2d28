import { basename, dirname } from 'node:path';

import { canonicalModelName } from '../ollama/model-name.js';
import { forEachJsonLine, type JsonObject, type SkipReason } from '../telemetry/jsonl-reader.js';
import { isOlderThan } from '../telemetry/log-retention.js';
import { AttentionTracker } from './attention.js';
import { ChainAccumulator } from './chains.js';
import { EscalatedTasks } from './escalated-tasks.js';
import { EscalationCauses } from './escalation-causes.js';
import type { RunFilters } from './filters.js';
import { isoOrNull } from './format.js';
import { DURATION_BUCKETS_MS } from './histogram.js';
import { ModelLoads } from './model-loads.js';
import { HostRows } from './host-rows.js';
import { ModelRows } from './model-stats.js';
import { readControlLine, readRunLine, type RunLine } from './run-line.js';
import type { RunsSummary } from './summary-schema.js';
import { SUMMARY_SCHEMA_VERSION } from './summary-version.js';
import { TimelineAccumulator } from './timeline.js';

/** The bounds that keep a summary's memory constant whatever the size of the log. */
const DEFAULT_LIMITS = {
  /** Distinct models with their own row; runs of further models are counted under `(other)`. */
  maxModels: 500,
  /** Escalated tasks kept (the most recently active); past it `escalated_tasks_truncated` is true. */
  maxEscalatedTasks: 1000,
  /** Tasks not (yet) escalated whose attempt count is remembered (the most recently seen). */
  maxTrackedTasks: 100_000,
  /** Timeline events kept (the most recent). */
  maxEvents: 200,
};
type SummaryLimits = typeof DEFAULT_LIMITS;

/** Options of {@link summarizeRuns}. */
interface SummarizeOptions {
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

/**
 * Summarizes run logs, streaming each file in the order given, in bounded memory whatever their
 * size (see {@link SummaryLimits}); what is counted is in src/report/README.md. With
 * `filters.since`, a rotated file whose records are all older is not read (`isOlderThan`), so a
 * summary of the last day costs the same after months of history. A missing file reads as empty;
 * another I/O error rejects.
 *
 * @param files paths, oldest first, each directory's files together (see `listRunLogFiles`)
 */
export async function summarizeRuns(
  files: readonly string[],
  filters: RunFilters = {},
  options: SummarizeOptions = {},
): Promise<RunsSummary> {
  const dirs = options.dirs ?? [...new Set(files.map((file) => dirname(file)))];
  const builder = new SummaryBuilder(filters, { ...DEFAULT_LIMITS, ...options.limits }, dirs.length > 1);
  const read: string[] = [];
  let skippedFiles = 0;
  const sinceMs = filters.since?.getTime();
  for (const [i, file] of files.entries()) {
    const rotated = i + 1 < files.length && dirname(files[i + 1]!) === dirname(file);
    if (sinceMs !== undefined && rotated && (await isOlderThan(file, sinceMs))) {
      skippedFiles += 1;
      continue;
    }
    read.push(file);
    await forEachJsonLine(
      file,
      (record) => builder.add(record),
      (reason) => builder.skip(reason),
    );
  }
  return builder.result({ now: options.now ?? new Date(), dirs, files: read, skippedFiles });
}

/**
 * The summary as an accumulator: `add` each parsed line in reading order, `skip` each unreadable
 * one, then `result`. Every figure is over the selected runs, except `attention`, which `since`
 * and `status` do not narrow (what needs a human now is judged on every line read).
 */
class SummaryBuilder {
  readonly #filters: RunFilters;
  readonly #sinceMs: number | undefined;
  readonly #statuses: ReadonlySet<string> | undefined;
  readonly #modelFilterKey: string | undefined;
  readonly #models: ModelRows;
  readonly #tasks: EscalatedTasks;
  readonly #attention: AttentionTracker;
  readonly #causes = new EscalationCauses();
  readonly #chains = new ChainAccumulator();
  readonly #timeline: TimelineAccumulator;
  readonly #loads = new ModelLoads();
  readonly #hosts = new HostRows();
  #firstMs = Infinity;
  #lastMs = -Infinity;
  readonly #totals = { runs: 0, ok: 0, escalations: 0 };
  readonly #unread = { skipped: 0, blank: 0, unrecognized: 0 };

  /** @param outOfOrder lines may come far out of `ts` order (several directories read one after the other) */
  constructor(filters: RunFilters, limits: SummaryLimits, outOfOrder: boolean) {
    this.#filters = filters;
    this.#sinceMs = filters.since?.getTime();
    const status = filters.status;
    this.#statuses = status === undefined ? undefined : new Set(typeof status === 'string' ? [status] : status);
    this.#modelFilterKey = filters.model === undefined ? undefined : canonicalModelName(filters.model);
    this.#models = new ModelRows(limits.maxModels);
    this.#tasks = new EscalatedTasks(limits.maxEscalatedTasks, limits.maxTrackedTasks);
    this.#attention = new AttentionTracker(outOfOrder);
    this.#timeline = new TimelineAccumulator(limits.maxEvents);
  }

  /** One parsed line of the log. */
  add(record: JsonObject): void {
    if (record.kind === 'control') {
      // Not a run, but a reset settles what needed attention.
      const control = readControlLine(record);
      if (this.#isAbout(control.taskId, control.model, null)) this.#attention.control(control);
      return;
    }
    const line = readRunLine(record);
    if (line === null) {
      this.#unread.unrecognized += 1;
      return;
    }
    if (!this.#isAbout(line.taskId, line.model, line.loggedModel)) return;
    this.#attention.run(line);
    if (this.#sinceMs !== undefined && !(line.tsMs >= this.#sinceMs)) return;
    if (this.#statuses !== undefined && !this.#statuses.has(line.status)) return;
    this.#addRun(line);
  }

  /** One line that could not be read. */
  skip(reason: SkipReason): void {
    if (reason === 'blank') this.#unread.blank += 1;
    else this.#unread.skipped += 1;
  }

  /** The `task` and `model` filters (a control line without a model is about every model). */
  #isAbout(taskId: string | null, model: string | null, loggedModel: string | null): boolean {
    const { task, model: wanted } = this.#filters;
    if (task !== undefined && taskId !== task) return false;
    if (wanted === undefined || model === null) return true;
    return loggedModel === wanted || model === this.#modelFilterKey;
  }

  #addRun(selected: RunLine): void {
    // Past the limit of model rows, a new model's runs count as `(other)` everywhere.
    const row = this.#models.add(selected);
    const line = row === selected.model ? selected : { ...selected, model: row };
    this.#chains.add(line);
    this.#loads.add(line);
    this.#hosts.add(line);
    if (line.willRetry) return; // the caller never saw it: not a run of theirs
    this.#totals.runs += 1;
    if (line.status === 'ok') this.#totals.ok += 1;
    if (line.escalate) {
      this.#totals.escalations += 1;
      this.#causes.add(line);
    }
    if (Number.isFinite(line.tsMs)) this.#addToTimeline(line);
    this.#tasks.add(line);
  }

  #addToTimeline(line: RunLine): void {
    const { tsMs, model, taskId } = line;
    if (tsMs < this.#firstMs) this.#firstMs = tsMs;
    if (tsMs > this.#lastMs) this.#lastMs = tsMs;
    this.#timeline.addRun(tsMs, line.status !== 'ok', line.escalate);
    if (line.escalate) this.#timeline.addEvent({ tsMs, kind: 'escalation', model, task_id: taskId, detail: line.reason });
    if (line.opening !== null)
      this.#timeline.addEvent({ tsMs, kind: 'circuit_opening', model, task_id: taskId, detail: line.opening });
  }

  #timelineResult(): RunsSummary['timeline'] {
    const loads = this.#loads.result();
    return { ...this.#timeline.result(), loads: loads.rows, loads_truncated: loads.truncated };
  }

  result(read: { now: Date; dirs: readonly string[]; files: readonly string[]; skippedFiles: number }): RunsSummary {
    const several = read.dirs.length > 1;
    const { since, model, task } = this.#filters;
    const iso = (ms: number): string | null => (this.#totals.runs > 0 ? isoOrNull(ms) : null);
    const [tasks, causes, models] = [this.#tasks.result(), this.#causes.result(), this.#models.result()];
    return {
      schema: SUMMARY_SCHEMA_VERSION,
      generated_at: read.now.toISOString(),
      filters: {
        since: since?.toISOString() ?? null,
        model: model ?? null,
        task: task ?? null,
        status: this.#statuses === undefined ? null : [...this.#statuses],
      },
      range: { first_ts: iso(this.#firstMs), last_ts: iso(this.#lastMs) },
      files: read.files.map((file) => (several ? file : basename(file))),
      files_skipped: read.skippedFiles,
      total_runs: this.#totals.runs,
      total_ok: this.#totals.ok,
      total_escalations: this.#totals.escalations,
      skipped_lines: this.#unread.skipped,
      blank_lines: this.#unread.blank,
      unrecognized_records: this.#unread.unrecognized,
      models_truncated: models.truncated,
      escalated_tasks_truncated: tasks.truncated,
      escalations_without_task: tasks.withoutTask,
      dirs: [...read.dirs],
      attention: this.#attention.result(),
      escalation_causes: causes.rows,
      escalation_causes_truncated: causes.truncated,
      chains: this.#chains.result(),
      duration_buckets_ms: [...DURATION_BUCKETS_MS],
      models: models.rows,
      escalated_tasks: tasks.rows,
      timeline: this.#timelineResult(),
      hosts: this.#hosts.result(),
    };
  }
}
