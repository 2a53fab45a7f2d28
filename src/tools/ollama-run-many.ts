import * as z from 'zod';
import type { Config } from '../config/config.js';
import { formatElapsed } from './progress.js';
import type { AnyToolDefinition, ToolOutcome } from './tool-definition.js';
import {
  batchReplySchema,
  jobName,
  runBatch,
  summarize,
  toBatchReply,
  toRunningBatchReply,
  type BatchProgress,
  type BatchReply,
  type BatchResult,
} from '../app/call/run-batch.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import type { RunService } from '../app/run-service.js';
import { ollamaRunJobSchema, REPLY_WITHIN_FIELD, toRunRequest } from './ollama-run.js';
import { jobHandlers, specMetadata, type JobScope, type Work, type WorkStart } from './job-reply.js';
import { randomUUID } from 'node:crypto';
import type { RunResult } from '../app/reply/run-result.js';
import { renderRunText } from './run-text.js';
import { MAX_BATCH_PROMPT_CHARS, RESPONSE_FORMAT_FIELD, requestedFormat, timeoutField } from './shared-fields.js';

export const MAX_BATCH_JOBS = 100;
const MAX_BATCH_CONCURRENCY = 8;

const JOBS_DESCRIPTION = "Each job takes ollama_run's arguments but response_format.";
const CONCURRENCY_DESCRIPTION = 'Jobs at once, 1-8 (default 3).';
const DEADLINE_DESCRIPTION = 'Limit of the whole batch; jobs not started by then end not_started.';

/** "all" (the default), or how many ok jobs end the batch: the rest are cancelled, and not counted. */
const RETURN_WHEN_FIELD = z
  .union(
    [z.literal('all'), z.number().int().min(1, 'must be at least 1').max(MAX_BATCH_JOBS, `must be at most ${MAX_BATCH_JOBS}`)],
    {
      error: `must be "all" or a number of ok jobs from 1 to ${MAX_BATCH_JOBS}`,
    },
  )
  .optional()
  .describe('"all", or N: end once N jobs are ok, cancelling the rest.');

export const ollamaRunManyInputSchema = z.strictObject({
  jobs: z
    .array(ollamaRunJobSchema)
    .min(1, 'must hold at least one job')
    .max(MAX_BATCH_JOBS, `must hold at most ${MAX_BATCH_JOBS} jobs`)
    // Keeps every valid call within one message (MAX_MESSAGE_BYTES): a larger batch is refused here, clearly.
    .refine((jobs) => totalPromptChars(jobs) <= MAX_BATCH_PROMPT_CHARS, {
      error: (issue) =>
        `the prompts of one call must total at most ${MAX_BATCH_PROMPT_CHARS} characters (split the jobs into several calls), got ${totalPromptChars(issue.input as { prompt: string }[])}`,
    })
    .describe(JOBS_DESCRIPTION),
  concurrency: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_BATCH_CONCURRENCY, `must be at most ${MAX_BATCH_CONCURRENCY}`)
    .optional()
    .describe(CONCURRENCY_DESCRIPTION),
  deadline_ms: timeoutField().describe(DEADLINE_DESCRIPTION),
  response_format: RESPONSE_FORMAT_FIELD,
  reply_within_ms: REPLY_WITHIN_FIELD,
  return_when: RETURN_WHEN_FIELD,
});

/**
 * What tools/list shows: a job's arguments are ollama_run's, which the agent has read once already;
 * listing them again would cost it as much again in every session. Each job is still checked whole.
 */
const listedInputSchema = z.strictObject({
  jobs: z.array(z.looseObject({ model: z.string(), prompt: z.string() })).describe(JOBS_DESCRIPTION),
  concurrency: z.number().int().optional().describe(CONCURRENCY_DESCRIPTION),
  deadline_ms: z.number().int().optional().describe(DEADLINE_DESCRIPTION),
  response_format: RESPONSE_FORMAT_FIELD,
  reply_within_ms: z.number().int().optional().describe("As ollama_run's, for the batch."),
  return_when: RETURN_WHEN_FIELD,
});

type Input = z.output<typeof ollamaRunManyInputSchema>;

function totalPromptChars(jobs: readonly { prompt: string }[]): number {
  return jobs.reduce((sum, job) => sum + job.prompt.length, 0);
}

/** `service`: the run service, built on the first call (see App.services). */
export function ollamaRunManyTool(service: () => Promise<RunService>, config: Config, scope: JobScope): AnyToolDefinition {
  return {
    name: 'ollama_run_many',
    title: 'Run several local model jobs',
    description: [
      'Run up to 100 ollama_run jobs; the replies come back in input order, with a summary.',
      "Read each job's `escalate`: true means STOP, do not run that task again; hand it to a human or a stronger model.",
    ].join(' '),
    inputSchema: ollamaRunManyInputSchema,
    listedInputSchema,
    outputSchema: batchReplySchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    ...jobHandlers(service, config, scope, (runs, input: Input, how) => startBatch(runs, input, config, how), present),
    async onInvalidInput(problem, rawArguments) {
      await (await service()).rejectInvalid({}, problem, 'ollama_run_many');
      const empty: BatchResult = { batch_id: '', results: [], summary: summarize([]) };
      const structured: BatchReply = {
        ...toBatchReply(empty, requestedFormat(rawArguments)),
        next: `Nothing was run: fix the arguments and call again. ${problem}`,
      };
      return { structured, text: `REJECTED (invalid_input), nothing was run. ${problem}`, isError: true };
    },
  };
}

/** A batch under way, which may go on as a job (kept as each of its jobs ends). */
function startBatch(runs: RunService, input: Input, config: Config, how: WorkStart): Work<BatchResult, BatchReply> {
  const id = how.id ?? randomUUID();
  const progress: BatchProgress = { done: 0, running: 0, total: input.jobs.length };
  const soFar: (RunResult | null)[] = input.jobs.map(() => null);
  const startedAt = performance.now();
  const startedAtMs = Date.now();
  let handedOver = false;
  const keep = () => runs.jobs.progress(id, { batch_id: id, results: [...soFar] });
  const now = () => describeBatch(progress, performance.now() - startedAt);
  const result = runBatch(
    runs,
    input.jobs.map(toRunRequest),
    {
      batchId: id,
      concurrency: Math.min(input.concurrency ?? 3, config.concurrency),
      signal: how.signal,
      meta: how.meta,
      deadlineAt: input.deadline_ms === undefined ? undefined : Date.now() + input.deadline_ms,
      returnWhen: input.return_when === 'all' ? undefined : input.return_when,
      onResult: (index, ended) => {
        soFar[index] = ended;
        if (handedOver) void keep();
      },
    },
    progress,
  );
  return {
    result,
    progress: () => ({ progress: progress.done, total: progress.total, message: now() }),
    handOver: async (owner, cancel) => {
      handedOver = true;
      const tasks = input.jobs.map((job) => job.task_id ?? null);
      await runs.jobs.adopt({ id, kind: 'batch', owner, tasks, model: null, startedAt: startedAtMs, result, live: null, cancel });
      await keep();
    },
    running: (format) => presentRunningBatch(id, soFar, format, now()),
  };
}

/** `3/10 jobs done, 3 running, 4 waiting, 42 s elapsed`. */
function describeBatch(progress: BatchProgress, elapsedMs: number): string {
  const waiting = progress.total - progress.done - progress.running;
  return `${progress.done}/${progress.total} jobs done, ${progress.running} running, ${waiting} waiting, ${formatElapsed(elapsedMs)} elapsed`;
}

/** A batch that goes on as a job: the jobs that ended so far, and the handle in both views. */
export function presentRunningBatch(
  jobId: string,
  soFar: readonly (RunResult | null)[],
  format: ResponseFormat,
  now: string,
): ToolOutcome<BatchReply> {
  const structured = toRunningBatchReply(jobId, soFar, format, jobId);
  const ended = soFar.filter((result) => result !== null).length;
  const text = [
    `RUNNING: the batch goes on as job ${jobId}: ${ended} of ${soFar.length} job(s) ended so far. Nothing of the rest failed.`,
    `NOW: ${now}`,
    `NEXT: ${structured.next}`,
  ].join('\n');
  return { structured, text, isError: false, fields: { metadata: batchMetadata(soFar) } };
}

/** Each job's `metadata` of the specification (a running one's says running), and whether any escalated. */
function batchMetadata(results: readonly (RunResult | null)[]) {
  const jobs = results.map((result) => (result === null ? { status: 'running', escalate: false } : specMetadata(result)));
  return { escalate: jobs.some((job) => job.escalate), jobs };
}

export function present(result: BatchResult, format: ResponseFormat): ToolOutcome<BatchReply> {
  const structured = toBatchReply(result, format);
  const s = result.summary;
  const lines = [
    `Batch of ${s.total} job(s): ${s.ok} ok, ${s.failed} failed (${s.timed_out} timed out, ${s.not_started} not started, ${s.cancelled} cancelled), ${s.escalated} escalated.`,
  ];
  if (s.escalate) {
    const tasks = result.results.flatMap((r, i) =>
      r.metadata.escalate ? [`${jobName(r, i)}: ${r.metadata.escalation_reason}`] : [],
    );
    lines.push(`ESCALATE: STOP RETRYING these and hand them upwards: ${tasks.join('; ')}.`);
  }
  if (structured.next !== undefined) lines.push(`NEXT: ${structured.next}`);
  const total = result.results.length;
  // Each job's place, counted from 1 as the prose counts them, and its task.
  result.results.forEach((r, i) => {
    const task = r.metadata.task_id ? ` (task "${r.metadata.task_id}")` : '';
    lines.push(`--- job ${i + 1} of ${total}${task} ---\n${renderRunText(r, format, total)}`);
  });
  return { structured, text: lines.join('\n\n'), isError: s.failed > 0, fields: { metadata: batchMetadata(result.results) } };
}
