import * as z from 'zod';

/**
 * The summary of runs.jsonl that `ollama-runner-mcp report --json` prints and `ollama_runs_summary`
 * returns (the latter without `timeline`, and cut to the top N). Field names are stable: a change of
 * meaning or type bumps `schema`; new fields may be added without a bump. Documented field by field
 * in src/report/README.md.
 */
export const SUMMARY_SCHEMA_VERSION = 1;

const ms = z.number().nullable();

export const modelSummarySchema = z.object({
  model: z
    .string()
    .describe(
      'canonical model name (llama3.2 = llama3.2:latest = library/llama3.2:latest); "(other)" collects models past the cap',
    ),
  runs: z.number().int().describe('attempts, rejected ones (circuit_open, invalid_input) included'),
  ok: z.number().int().describe('attempts with status "ok"'),
  ok_pct: z.number().describe('ok / runs x 100, one decimal'),
  timeouts: z.number().int().describe('attempts with status "timeout" (also counted in failures.timeout)'),
  failures: z.record(z.string(), z.number().int()).describe('count per non-ok status that occurred; they add up to runs - ok'),
  escalations: z.number().int().describe('attempts whose result said escalate: true'),
  circuit_openings: z.number().int().describe('attempts with circuit.transition "opened" or "reopened"'),
  spawned: z.number().int().describe('attempts that ran a process (duration_ms > 0): the population of duration_ms and queue_ms'),
  duration_ms: z
    .object({ p50: ms, p95: ms, max: ms })
    .describe('spawn-to-exit time of spawned attempts; percentiles within 1%, max exact; null when none spawned'),
  duration_histogram: z
    .array(z.number().int())
    .describe(
      'spawned attempts per duration bucket: one count per bound of duration_buckets_ms (duration <= bound, above the previous one), then one for longer; they add up to spawned',
    ),
  queue_ms: z.object({ p50: ms }).describe('time waiting for a slot, over spawned attempts; within 1%'),
});

const durationBucketsMs = z
  .array(z.number())
  .describe(
    'upper bounds in ms (inclusive) of the buckets of models[].duration_histogram, ascending; its last bucket counts longer runs',
  );

export const escalatedTaskSchema = z.object({
  task_id: z.string(),
  model: z.string().describe('canonical model of its last attempt'),
  attempts: z
    .number()
    .int()
    .describe("attempts of this task in the selected records (at least its escalating attempt's retry_count + 1)"),
  escalations: z.number().int().describe('attempts of this task that said escalate: true'),
  last_status: z.string().describe('status of its last attempt (which may come after the escalation)'),
  last_error: z.string().nullable().describe('error text of its last failed attempt'),
  escalation_reason: z.string().nullable().describe('reason given by its last escalating attempt'),
  last_ts: z.string().nullable().describe('time of its last attempt'),
});

export const timelineBucketSchema = z.object({
  start: z.string().describe('ISO time the bucket starts (UTC, aligned to the bucket size)'),
  runs: z.number().int(),
  failures: z.number().int().describe('runs whose status is not "ok"'),
  escalations: z.number().int(),
});

export const timelineEventSchema = z.object({
  ts: z.string(),
  kind: z.enum(['escalation', 'circuit_opening']),
  model: z.string(),
  task_id: z.string().nullable(),
  detail: z.string().nullable().describe('escalation_reason for an escalation; "opened" or "reopened" for a circuit opening'),
});

export const timelineSchema = z.object({
  bucket: z.string().describe('bucket size: 1m, 5m, 15m, 1h, 6h, 1d, 7d, then doubling (14d, 28d, ...)'),
  bucket_seconds: z.number().int(),
  buckets: z
    .array(timelineBucketSchema)
    .describe('every bucket from the first run to the last, empty ones included; at most 200'),
  events: z.array(timelineEventSchema).describe('the most recent escalations and circuit openings, oldest first'),
  events_truncated: z.boolean().describe('true when older events were left out'),
});

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
  total_runs: z.number().int().describe('selected attempts'),
  total_ok: z.number().int(),
  total_escalations: z.number().int(),
  skipped_lines: z.number().int().describe('torn or unreadable lines (not JSON, or not an object), skipped'),
  blank_lines: z.number().int(),
  unrecognized_records: z.number().int().describe('JSON objects without a string model and status, ignored'),
  models_truncated: z.boolean().describe('true when more than 500 models were seen; the rest are counted under "(other)"'),
  escalated_tasks_truncated: z
    .boolean()
    .describe('true when more than 1000 tasks escalated: only the most recently active ones were kept'),
  escalations_without_task: z.number().int().describe('escalating attempts that had no task_id (not in escalated_tasks)'),
};

export const runsSummarySchema = z.object({
  ...summaryCore,
  duration_buckets_ms: durationBucketsMs,
  models: z.array(modelSummarySchema).describe('most runs first'),
  escalated_tasks: z.array(escalatedTaskSchema).describe('most recent last_ts first'),
  timeline: timelineSchema,
});

export type ModelSummary = z.infer<typeof modelSummarySchema>;
export type EscalatedTask = z.infer<typeof escalatedTaskSchema>;
export type TimelineBucket = z.infer<typeof timelineBucketSchema>;
export type TimelineEvent = z.infer<typeof timelineEventSchema>;
export type Timeline = z.infer<typeof timelineSchema>;
export type SummaryFiltersView = z.infer<typeof summaryFiltersSchema>;
export type RunsSummary = z.infer<typeof runsSummarySchema>;

/** The summary the `ollama_runs_summary` tool returns: no timeline, the top N models and tasks. */
export const compactRunsSummarySchema = z.object({
  ...summaryCore,
  duration_buckets_ms: durationBucketsMs.optional().describe('as in the full summary; absent when `error` is set'),
  models: z.array(modelSummarySchema).describe('the top N by runs'),
  models_omitted: z.number().int().describe('models left out of `models` (fewer runs)'),
  escalated_tasks: z.array(escalatedTaskSchema).describe('the N most recent; last_error cut to 200 characters'),
  escalated_tasks_omitted: z.number().int().describe('tracked escalated tasks left out'),
  error: z.string().nullable().describe('why the summary could not be made (bad arguments, unreadable log); null when it could'),
});

export type CompactRunsSummary = z.infer<typeof compactRunsSummarySchema>;
