import * as z from 'zod';

import type { AnyToolDefinition, ToolOutcome } from './tool-definition.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import { RESPONSE_FORMAT_FIELD, requestedFormat } from './shared-fields.js';
import { RUN_STATUSES } from '../policy/run-status.js';
import { isReportUsageError, parseSince, type RunFilters } from '../report/filters.js';
import { compactRunsSummarySchema, type CompactRunsSummary, type RunsSummary } from '../report/summary-schema.js';
import { SUMMARY_SCHEMA_VERSION } from '../report/summary-version.js';

/** Window used when the caller gives no `since`. */
const DEFAULT_SUMMARY_SINCE = '24h';
/** Escalated tasks' error texts are cut to this in the tool's result. */
const TOOL_ERROR_CHARS = 200;

const ollamaRunsSummaryInputSchema = z.strictObject({
  model: z
    .string()
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .optional()
    .describe('Only this model.'),
  since: z
    .string()
    .max(100, 'must be at most 100 characters')
    .superRefine((value, ctx) => {
      if (value.trim() === 'all') return;
      try {
        parseSince(value, new Date());
      } catch (error) {
        if (!isReportUsageError(error)) throw error;
        // The registry adds `, got "<value>"` itself.
        ctx.addIssue({ code: 'custom', message: error.message.replace(/^since: /, '').replace(/; got ".*"$/s, '') });
      }
    })
    .default(DEFAULT_SUMMARY_SINCE)
    .describe(`Only runs since: "30m", "7d", an ISO date or time, or "all" (default "${DEFAULT_SUMMARY_SINCE}").`),
  status: z
    .union([z.enum(RUN_STATUSES), z.array(z.enum(RUN_STATUSES)).min(1, 'must list at least one status')], {
      error: `must be a run status (${RUN_STATUSES.join(', ')}) or a list of them`,
    })
    .optional()
    .describe('Only runs with this status (or any of these).'),
  task: z
    .string()
    .min(1, 'must not be empty')
    .max(128, 'must be at most 128 characters')
    .optional()
    .describe('Only this task_id.'),
  top: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(50, 'must be at most 50')
    .default(10)
    .describe('How many models and escalated tasks to list (default 10).'),
  response_format: RESPONSE_FORMAT_FIELD,
});

type OllamaRunsSummaryInput = z.output<typeof ollamaRunsSummaryInputSchema>;

/** What tools/list shows: `status` without the list of statuses twice (the server names them when one is wrong). */
const listedInputSchema = ollamaRunsSummaryInputSchema.extend({
  status: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('Only runs with this status, such as "timeout" (or any of a list).'),
});

/** The tool's view of a full summary: no timeline, the top N models and escalated tasks, short error texts. */
function compactSummary(summary: RunsSummary, top: number): CompactRunsSummary {
  const {
    timeline: _timeline,
    hosts: _hosts,
    models,
    escalated_tasks: tasks,
    attention,
    escalation_causes: causes,
    chains,
    ...rest
  } = summary;
  return {
    ...rest,
    models: models.slice(0, top),
    models_omitted: Math.max(0, models.length - top),
    escalated_tasks: tasks.slice(0, top).map((task) => ({ ...task, last_error: cutError(task.last_error) })),
    escalated_tasks_omitted: Math.max(0, tasks.length - top),
    attention: {
      ...attention,
      // The error text of each is in its escalation cause: not repeated per task.
      tasks: attention.tasks.slice(0, top).map((task) => ({ ...task, last_error: null })),
      circuits_open: attention.circuits_open.map((c) => ({ ...c, last_error: cutError(c.last_error) })),
    },
    escalation_causes: causes.slice(0, top).map((cause) => ({ ...cause, error: cutError(cause.error) })),
    chains: { ...chains, rows: chains.rows.slice(0, top) },
    error: null,
  };
}

function cutError(text: string | null): string | null {
  return text !== null && text.length > TOOL_ERROR_CHARS ? `${text.slice(0, TOOL_ERROR_CHARS - 3)}...` : text;
}

/** The concise summary leaves out the bookkeeping (files, filters, time range, schema) and what is 0 or empty. */
const runsSummaryReplySchema = compactRunsSummarySchema.partial();

type RunsSummaryReply = z.infer<typeof runsSummaryReplySchema>;

const CONCISE_FIELDS = [
  'total_runs',
  'total_ok',
  'total_escalations',
  'attention',
  'escalation_causes',
  'models',
  'models_omitted',
  'escalated_tasks',
  'escalated_tasks_omitted',
  'escalations_without_task',
  'chains',
  'error',
] as const satisfies readonly (keyof CompactRunsSummary)[];

function toRunsSummaryReply(summary: CompactRunsSummary, format: ResponseFormat): RunsSummaryReply {
  if (format === 'detailed') return summary;
  const kept = CONCISE_FIELDS.filter((key) => {
    const value = summary[key];
    if (key === 'chains') return summary.chains.calls > 0;
    return value !== null && value !== 0 && !(Array.isArray(value) && value.length === 0);
  });
  return Object.fromEntries(kept.map((key) => [key, summary[key]]));
}

/** A result that says why no summary could be made, in the same shape as a summary. */
function failed(error: string, now: Date, format: ResponseFormat): ToolOutcome<RunsSummaryReply> {
  const structured: CompactRunsSummary = {
    schema: SUMMARY_SCHEMA_VERSION,
    generated_at: now.toISOString(),
    filters: { since: null, model: null, task: null, status: null },
    range: { first_ts: null, last_ts: null },
    files: [],
    files_skipped: 0,
    total_runs: 0,
    total_ok: 0,
    total_escalations: 0,
    skipped_lines: 0,
    blank_lines: 0,
    unrecognized_records: 0,
    models_truncated: false,
    escalated_tasks_truncated: false,
    escalations_without_task: 0,
    models: [],
    models_omitted: 0,
    escalated_tasks: [],
    escalated_tasks_omitted: 0,
    dirs: [],
    attention: { circuits_open: [], tasks: [], tasks_total: 0, blocked_tasks: 0 },
    escalation_causes: [],
    escalation_causes_truncated: false,
    chains: { calls: 0, fell_through: 0, rows: [], busy_retries: 0, busy_gave_up: 0 },
    error,
  };
  return { structured: toRunsSummaryReply(structured, format), text: `ollama_runs_summary FAILED: ${error}`, isError: true };
}

/** `ollama_runs_summary`: the report of the run log over a window, cut to fit a model's context. Runs nothing. */
export function ollamaRunsSummaryTool(deps: { readonly telemetryDir: string; readonly now?: () => Date }): AnyToolDefinition {
  const clock = deps.now ?? (() => new Date());
  return {
    name: 'ollama_runs_summary',
    title: 'Summary of recent runs',
    description: [
      'Summarize the run log (last 24h unless `since`): what needs attention now (open circuits, escalated tasks not reset),',
      'escalations by cause, and per model runs, ok %, failures by status, latency and tokens. Read-only.',
    ].join(' '),
    inputSchema: ollamaRunsSummaryInputSchema,
    listedInputSchema,
    outputSchema: runsSummaryReplySchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(input: OllamaRunsSummaryInput) {
      const now = clock();
      const format = input.response_format ?? 'concise';
      const filters: { -readonly [K in keyof RunFilters]: RunFilters[K] } = {};
      try {
        if (input.since.trim() !== 'all') filters.since = parseSince(input.since, now);
      } catch (error) {
        if (!isReportUsageError(error)) throw error;
        return failed(`Invalid arguments: \`since\`: ${error.message.replace(/^since: /, '')}.`, now, format);
      }
      if (input.model !== undefined) filters.model = input.model;
      if (input.task !== undefined) filters.task = input.task;
      if (input.status !== undefined) filters.status = input.status;
      // The log reader and the report are loaded on the first call: a server start does not need them.
      const [{ summarizeRuns }, { listRunLogFiles }, { renderReportText }] = await Promise.all([
        import('../report/summary.js'),
        import('../telemetry/log-files.js'),
        import('../report/render-text.js'),
      ]);
      let summary: RunsSummary;
      try {
        summary = await summarizeRuns(await listRunLogFiles(deps.telemetryDir), filters, { now });
      } catch (error) {
        return failed(`could not read the run log in ${deps.telemetryDir}: ${(error as Error).message}`, now, format);
      }
      const compact = compactSummary(summary, input.top);
      return {
        structured: toRunsSummaryReply(compact, format),
        text: renderReportText(compact, { errorWidth: 80 }),
        isError: false,
      };
    },
    async onInvalidInput(problem, rawArguments) {
      return failed(problem, clock(), requestedFormat(rawArguments));
    },
  };
}
