import * as z from 'zod';

import { SUMMARY_SCHEMA_VERSION } from './summary-version.js';

/**
 * The summary of runs.jsonl that `ollama-runner-mcp report --json` prints and `ollama_runs_summary`
 * returns (the latter without `timeline`, and cut to the top N). Field names are stable: a change of
 * meaning or type bumps `schema` (SUMMARY_SCHEMA_VERSION); new fields may be added without a bump.
 * Documented field by field in src/report/README.md.
 */

const int = z.number().int();
const ms = z.number().nullable();
const percentiles = z.object({ p50: ms, p95: ms, max: ms });

export const modelSummarySchema = z.object({
  model: z
    .string()
    .describe(
      'canonical model name (llama3.2 = llama3.2:latest = library/llama3.2:latest); "(other)" collects models past the cap',
    ),
  runs: int.describe('attempts, rejected ones (circuit_open, invalid_input) included'),
  ok: int.describe('attempts with status "ok"'),
  ok_pct: z.number().describe('ok / runs x 100, one decimal'),
  timeouts: int.describe('attempts with status "timeout" (also counted in failures.timeout)'),
  failures: z.record(z.string(), int).describe('count per non-ok status that occurred; they add up to runs - ok'),
  escalations: int.describe('attempts whose result said escalate: true'),
  circuit_openings: int.describe('attempts with circuit.transition "opened" or "reopened"'),
  spawned: int.describe('attempts that ran a process (duration_ms > 0): the population of duration_ms and queue_ms'),
  duration_ms: percentiles.describe(
    'spawn-to-exit time of spawned attempts; percentiles within 1%, max exact; null when none spawned',
  ),
  duration_histogram: z
    .array(int)
    .describe(
      'spawned attempts per duration bucket: one count per bound of duration_buckets_ms (duration <= bound, above the previous one), then one for longer; they add up to spawned',
    ),
  queue_ms: z.object({ p50: ms }).describe('time waiting for a slot, over spawned attempts; within 1%'),
  ok_duration_ms: percentiles.describe(
    'spawn-to-exit time of the answers (status ok) only: what a caller waits for an answer; null when none',
  ),
  lost_ms: z.number().describe('time spent in failed attempts (sum of their duration_ms), those the server retried included'),
  lost_attempts: int.describe('failed attempts that ran a process (duration_ms > 0), those the server retried included'),
  retried: z
    .object({
      busy_retries: int.describe('server_busy / rate_limited / spawn_failed lines the server retried by itself (will_retry)'),
      fell_through: int.describe('failed lines after which the server went on to the next model of a chain'),
    })
    .describe('lines with will_retry: true: the caller never saw them; not counted in runs, ok or failures'),
  tokens: z
    .object({
      runs: int.describe('attempts whose usage reported output tokens'),
      output_tokens: int.describe('sum of usage.output_tokens'),
      prompt_tokens: int.describe('sum of usage.prompt_tokens'),
      output_tps_p50: z.number().nullable().describe('median of usage.tokens_per_second (output tokens per second); within 1%'),
      prompt_tokens_p95: z.number().nullable().describe('95th percentile of usage.prompt_tokens; within 1%'),
      cold_loads: int.describe('attempts whose usage.load_ms was over COLD_LOAD_MS (1000 ms): the model was loaded'),
      may_be_truncated: int.describe('attempts with a prompt_may_be_truncated warning'),
    })
    .describe('token usage (schema v2 lines; v1 lines have none)'),
});

const durationBucketsMs = z
  .array(z.number())
  .describe(
    'upper bounds in ms (inclusive) of the buckets of models[].duration_histogram, ascending; its last bucket counts longer runs',
  );

export const escalatedTaskSchema = z.object({
  task_id: z.string(),
  model: z.string().describe('canonical model of its last attempt'),
  attempts: int.describe("attempts of this task in the selected records (at least its escalating attempt's retry_count + 1)"),
  escalations: int.describe('attempts of this task that said escalate: true'),
  last_status: z.string().describe('status of its last attempt (which may come after the escalation)'),
  last_error: z.string().nullable().describe('error text of its last failed attempt'),
  escalation_reason: z.string().nullable().describe('reason given by its last escalating attempt'),
  last_ts: z.string().nullable().describe('time of its last attempt'),
});

const timelineBucketSchema = z.object({
  start: z.string().describe('ISO time the bucket starts (UTC, aligned to the bucket size)'),
  runs: int,
  failures: int.describe('runs whose status is not "ok"'),
  escalations: int,
});

export const timelineEventSchema = z.object({
  ts: z.string(),
  kind: z.enum(['escalation', 'circuit_opening']),
  model: z.string(),
  task_id: z.string().nullable(),
  detail: z.string().nullable().describe('escalation_reason for an escalation; "opened" or "reopened" for a circuit opening'),
});

export const modelLoadRowSchema = z.object({
  day: z.string().describe('UTC day, YYYY-MM-DD'),
  model: z.string().describe('as in models[].model'),
  loads: int.describe('lines of this model that day that loaded it (cold_load, else usage.load_ms of 100 ms or more)'),
  load_ms: int.describe('their load time, summed (usage.load_ms)'),
  runs: int.describe("the model's runs that day, as in models[].runs: a load for most of them, many times a day, is thrash"),
});

export const timelineSchema = z.object({
  bucket: z.string().describe('bucket size: 1m, 5m, 15m, 1h, 6h, 1d, 7d, then doubling (14d, 28d, ...)'),
  bucket_seconds: int,
  buckets: z
    .array(timelineBucketSchema)
    .describe('every bucket from the first run to the last, empty ones included; at most 200'),
  events: z.array(timelineEventSchema).describe('the most recent escalations and circuit openings, oldest first'),
  events_truncated: z.boolean().describe('true when older events were left out'),
  loads: z
    .array(modelLoadRowSchema)
    .describe('model loads per UTC day and model, only where there was one; oldest day first, then most loads'),
  loads_truncated: z
    .boolean()
    .describe('true when older days were left out of loads (past the 200 most recent days, or 1000 rows)'),
});

export const openCircuitSchema = z.object({
  model: z.string(),
  state: z.string().describe('"open" or "half_open": the state the last line of this model left its circuit in'),
  since: z.string().nullable().describe('time of its last opening (opened or reopened), when in the selection'),
  consecutive_failures: int,
  retry_at: z.string().nullable().describe('when the cooldown ends (ts + retry_after_seconds); null when unknown'),
  last_error: z.string().nullable().describe('error of its last failed run'),
});

export const attentionTaskSchema = z.object({
  task_id: z.string(),
  model: z.string().describe('canonical model of its last escalating run'),
  reason: z.string().nullable().describe('escalation_reason of its last escalating run'),
  status: z.string().describe('status of its last escalating run'),
  escalated_at: z.string().nullable().describe('time of its last escalating run'),
  escalations: int,
  blocked: int.describe('runs refused as blocked since it escalated'),
  last_error: z.string().nullable(),
});

export const attentionSchema = z
  .object({
    circuits_open: z
      .array(openCircuitSchema)
      .describe('models whose circuit the log last left open or half-open, not reset since'),
    tasks: z
      .array(attentionTaskSchema)
      .describe('tasks escalated and neither reset (ollama_reset) nor answered (a later ok run) since; most recent first'),
    tasks_total: int.describe('such tasks in all (tasks lists at most 1000)'),
    blocked_tasks: int.describe('of them, tasks refused as blocked at least once'),
  })
  .describe(
    'what needs a human now, from every file read (the since and status filters do not apply to its lines; rotated files older than since are not read)',
  );

export const escalationCauseSchema = z.object({
  model: z.string(),
  reason: z.string().nullable().describe('escalation_reason'),
  status: z.string().describe('status of the escalating runs (the error kind)'),
  escalations: int.describe('escalating runs with this cause'),
  tasks: int.describe('distinct tasks among them (counted up to 1000)'),
  first_ts: z.string().nullable(),
  last_ts: z.string().nullable(),
  example_tasks: z.array(z.string()).describe('up to 3 task ids, the most recent first'),
  error: z.string().nullable().describe('the error text of the most recent one'),
});

const chainRowSchema = z.object({
  first_model: z.string().describe('the model the chain started with (chain_step 0)'),
  calls: int.describe('calls whose chain started with this model'),
  fell_through: int.describe('of them, calls answered (or failed) by a later model of the chain'),
  to: z
    .array(z.object({ model: z.string(), calls: int, ok: int }))
    .describe('the models that gave the result when the chain fell through, most calls first'),
});

export const chainsSchema = z
  .object({
    calls: int.describe('calls with a fallback chain (chain_id set), counted at their last line'),
    fell_through: int,
    rows: z.array(chainRowSchema).describe('most calls first'),
    busy_retries: int.describe('server_busy / rate_limited / spawn_failed lines retried by the server itself (will_retry)'),
    busy_gave_up: int.describe('calls that still ended server_busy / rate_limited / spawn_failed after busy retries'),
  })
  .describe('fallback chains and busy retries: what the server retried without the caller seeing a failure');

export const summaryFiltersSchema = z.object({
  since: z.string().nullable().describe('ISO time: only runs at or after it'),
  model: z.string().nullable(),
  task: z.string().nullable(),
  status: z.array(z.string()).nullable(),
});

const summaryCore = {
  schema: z.literal(SUMMARY_SCHEMA_VERSION),
  generated_at: z.string(),
  filters: summaryFiltersSchema,
  range: z
    .object({ first_ts: z.string().nullable(), last_ts: z.string().nullable() })
    .describe('earliest and latest ts of the selected runs; null when there are none'),
  files: z.array(z.string()).describe('log files read, in order (names inside the telemetry directory)'),
  files_skipped: int.describe('rotated files not read because every record in them is older than `since` (0 without `since`)'),
  total_runs: int.describe('selected attempts'),
  total_ok: int,
  total_escalations: int,
  skipped_lines: int.describe('torn or unreadable lines (not JSON, or not an object), skipped'),
  blank_lines: int,
  unrecognized_records: int.describe('JSON objects without a string model and status, ignored'),
  models_truncated: z.boolean().describe('true when more than 500 models were seen; the rest are counted under "(other)"'),
  escalated_tasks_truncated: z
    .boolean()
    .describe('true when more than 1000 tasks escalated: only the most recently active ones were kept'),
  escalations_without_task: int.describe('escalating attempts that had no task_id (not in escalated_tasks)'),
  dirs: z.array(z.string()).describe('telemetry directories read (report --dir repeated reads several)'),
  attention: attentionSchema,
  escalation_causes: z
    .array(escalationCauseSchema)
    .describe('escalations grouped by model, reason and status; most escalations first (blocked refusals not included)'),
  escalation_causes_truncated: z.boolean().describe('more than 200 causes: the rest are not listed'),
  chains: chainsSchema,
};

export const hostRowSchema = z.object({
  host: z.string().describe('the Ollama host, as runs.jsonl names it'),
  attempts: int.describe('lines sent to it, failovers and busy retries included'),
  runs: int.describe("the callers' runs it served (will_retry false)"),
  ok: int,
  failures: int.describe('lines that did not end ok'),
  unreachable: int.describe('lines that ended ollama_unreachable there (the calls went on to another host when one could serve)'),
  loads: int.describe('lines that loaded their model there'),
});

export const runsSummarySchema = z.object({
  ...summaryCore,
  duration_buckets_ms: durationBucketsMs,
  models: z.array(modelSummarySchema).describe('most runs first'),
  escalated_tasks: z.array(escalatedTaskSchema).describe('most recent last_ts first'),
  timeline: timelineSchema,
  hosts: z
    .array(hostRowSchema)
    .optional()
    .describe('runs, loads and failures per Ollama host (lines with a host); most attempts first'),
});

export type HostRow = z.infer<typeof hostRowSchema>;
export type ModelSummary = z.infer<typeof modelSummarySchema>;
export type EscalatedTask = z.infer<typeof escalatedTaskSchema>;
export type TimelineEvent = z.infer<typeof timelineEventSchema>;
export type Timeline = z.infer<typeof timelineSchema>;
export type ModelLoadRow = z.infer<typeof modelLoadRowSchema>;
export type SummaryFiltersView = z.infer<typeof summaryFiltersSchema>;
export type RunsSummary = z.infer<typeof runsSummarySchema>;

/** The summary the `ollama_runs_summary` tool returns: no timeline, the top N models and tasks. */
export const compactRunsSummarySchema = z.object({
  ...summaryCore,
  duration_buckets_ms: durationBucketsMs.optional().describe('as in the full summary; absent when `error` is set'),
  models: z.array(modelSummarySchema).describe('the top N by runs'),
  models_omitted: int.describe('models left out of `models` (fewer runs)'),
  escalated_tasks: z.array(escalatedTaskSchema).describe('the N most recent; last_error cut to 200 characters'),
  escalated_tasks_omitted: int.describe('tracked escalated tasks left out'),
  error: z.string().nullable().describe('why the summary could not be made (bad arguments, unreadable log); null when it could'),
});

export type OpenCircuit = z.infer<typeof openCircuitSchema>;
export type AttentionTask = z.infer<typeof attentionTaskSchema>;
export type Attention = z.infer<typeof attentionSchema>;
export type EscalationCause = z.infer<typeof escalationCauseSchema>;
export type Chains = z.infer<typeof chainsSchema>;

export type CompactRunsSummary = z.infer<typeof compactRunsSummarySchema>;
