import * as z from 'zod';
import type { Config } from '../config/config.js';
import { REPLY_WITHIN_RANGE } from '../config/ranges.js';
import type { BatchSoFar, JobView } from '../app/call/jobs.js';
import { batchReplySchema, type BatchResult } from '../app/call/run-batch.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import { runReplySchema } from '../app/reply/run-reply.js';
import type { RunResult } from '../app/reply/run-result.js';
import type { RunService } from '../app/run-service.js';
import type { StateBackend } from '../store/state-backend.js';
import { presentRunningBatch, present as presentBatch } from './ollama-run-many.js';
import { describeLiveRun, present as presentRun } from './ollama-run.js';
import { presentRunning, type JobScope } from './job-reply.js';
import { replyWithinMs } from './reply-within.js';
import { RESPONSE_FORMAT_FIELD, wholeNumber } from './shared-fields.js';
import type { AnyToolDefinition, ToolOutcome } from './tool-definition.js';

/** How long a cancel waits for the job to end, so that the reply says how it ended. */
const CANCEL_SETTLES_MS = 10_000;

const inputSchema = z.strictObject({
  job_id: z.string().uuid('must be a job_id given by ollama_run or ollama_run_many'),
  wait_ms: wholeNumber(REPLY_WITHIN_RANGE).optional().describe('Wait at most this long (default: what the client allows).'),
  cancel: z.boolean().optional().describe('Stop the job, uncounted.'),
  response_format: RESPONSE_FORMAT_FIELD,
});

type Input = z.output<typeof inputSchema>;

/**
 * A job as collected: a run's reply (its result once it ended, the same as ollama_run's, or `running`),
 * or a batch's (the results so far while it runs); `done` says which, and `escalate` is always there.
 */
const waitReplySchema = runReplySchema.partial().required({ escalate: true }).extend({
  job_id: z.string(),
  done: z.boolean(),
  summary: batchReplySchema.shape.summary.optional(),
  results: batchReplySchema.shape.results.optional(),
  batch_id: z.string().optional(),
});

type WaitReply = z.infer<typeof waitReplySchema>;

export interface OllamaWaitDeps {
  readonly service: () => Promise<RunService>;
  readonly store: () => Promise<StateBackend>;
  readonly config: Config;
  readonly scope: JobScope;
}

export function ollamaWaitTool(deps: OllamaWaitDeps): AnyToolDefinition {
  const { config, scope } = deps;
  return {
    name: 'ollama_wait',
    title: 'Collect a job',
    description: [
      'Collect a job handed back with status "running" and a job_id: waits for its end,',
      'then returns its result as the run would have (read escalate), or what it is doing now.',
    ].join(' '),
    inputSchema,
    outputSchema: waitReplySchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(input: Input, extra) {
      const runs = await deps.service();
      const format = input.response_format ?? 'concise';
      if (input.cancel === true) {
        const cancelled = await runs.jobs.cancel(input.job_id, scope.owner);
        if (cancelled) await runs.jobs.wait(input.job_id, scope.owner, CANCEL_SETTLES_MS, extra.signal);
      }
      const budget = replyWithinMs(undefined, config.replyWithinMs, scope.clientName());
      const waitMs = input.cancel === true ? 0 : Math.min(input.wait_ms ?? budget, budget);
      const view = await runs.jobs.wait(input.job_id, scope.owner, waitMs, extra.signal);
      if (view === null) return unknownJob(input.job_id);
      if (view.state === 'done') await runs.replied('results' in view.result ? view.result.results : [view.result]);
      return withJob(input.job_id, view.state === 'done', await presentView(view, format, deps));
    },
    async onInvalidInput(problem, rawArguments) {
      const jobId = (rawArguments as { job_id?: unknown } | null)?.job_id;
      const outcome = unknownJob(typeof jobId === 'string' ? jobId.slice(0, 64) : '');
      return { ...outcome, text: `REJECTED: ${problem}` };
    },
  };
}

/** A job that ended, as the tool that started it answers. */
export function presentEnded(view: Extract<JobView, { state: 'done' }>, format: ResponseFormat): ToolOutcome<unknown> {
  return view.record.kind === 'run'
    ? presentRun(view.result as RunResult, format)
    : presentBatch(view.result as BatchResult, format);
}

async function presentView(view: JobView, format: ResponseFormat, deps: OllamaWaitDeps): Promise<ToolOutcome<unknown>> {
  const { record } = view;
  if (view.state === 'done') return presentEnded(view, format);
  if (view.state === 'running') {
    const elapsed = Date.now() - record.startedAt;
    if (record.kind === 'batch')
      return presentRunningBatch(record.id, resultsSoFar(view.soFar, record.tasks.length), format, 'running');
    const now =
      view.live !== null
        ? describeLiveRun(view.live.model ?? record.model ?? 'the model', view.live, elapsed)
        : `running on server pid ${record.server.pid}`;
    return presentRunning(record.id, now, null, elapsed);
  }
  return lostJob(view, format, await deps.store());
}

/**
 * A job whose server stopped while it ran and whose end nothing recorded (it had not started its
 * model, or it was a batch): what is known of each call, with the escalation its task holds.
 */
async function lostJob(
  view: Extract<JobView, { state: 'lost' }>,
  format: ResponseFormat,
  store: StateBackend,
): Promise<ToolOutcome<unknown>> {
  const { record } = view;
  const tasks = record.tasks.filter((task): task is string => task !== null);
  const state = await store.snapshot(tasks).catch(() => null);
  const reply = (taskId: string | null) => {
    const entry = taskId === null ? undefined : state?.tasks[taskId];
    const escalate = entry?.escalated === true;
    const next = escalate
      ? `Stop: do not retry this task; escalate it to a human or a stronger model: it escalated before (${entry!.escalationReason}).`
      : 'The server running this job stopped before it ended: run the task again with the same task_id.';
    return {
      ok: false,
      status: 'interrupted' as const,
      escalate,
      ...(escalate ? { escalation_reason: entry!.escalationReason! } : {}),
      next,
      output: '',
    };
  };
  if (record.kind === 'run') {
    const structured = reply(record.tasks[0] ?? null);
    return { structured, text: `INTERRUPTED: ${structured.next}`, isError: true };
  }
  const soFar = resultsSoFar(record.result as BatchSoFar | null, record.tasks.length);
  const { structured } = presentRunningBatch(record.id, soFar, format, 'stopped');
  const results = structured.results.map((result, index) =>
    result.status === 'running' ? reply(record.tasks[index] ?? null) : result,
  );
  const next =
    'The server running this batch stopped before it ended: the jobs marked interrupted did not end; run their tasks again.';
  return {
    structured: { ...structured, next, results, summary: { ...structured.summary, running: 0 } },
    text: `INTERRUPTED: ${next}`,
    isError: true,
  };
}

/** A batch's results so far: none ended before its first was kept. */
function resultsSoFar(soFar: BatchSoFar | null, total: number): readonly (RunResult | null)[] {
  return soFar?.results ?? Array.from({ length: total }, () => null);
}

/** The job's handle and whether it ended, beside what its tool would say; `escalate` at the top for a batch too. */
function withJob(jobId: string, done: boolean, outcome: ToolOutcome<unknown>): ToolOutcome<WaitReply> {
  const structured = outcome.structured as Record<string, unknown>;
  const summary = structured.summary as { escalate?: boolean } | undefined;
  const escalate = (structured.escalate as boolean | undefined) ?? summary?.escalate ?? false;
  return { ...outcome, structured: { ...structured, escalate, job_id: jobId, done } as WaitReply };
}

function unknownJob(jobId: string): ToolOutcome<WaitReply> {
  const next = `No job ${jobId} to collect: a job_id given by ollama_run or ollama_run_many, collectable for an hour after its end, by the client that started it.`;
  return { structured: { job_id: jobId, done: false, escalate: false, next }, text: `UNKNOWN JOB: ${next}`, isError: true };
}
