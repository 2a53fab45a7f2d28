import * as z from 'zod';
import type { RunResult } from '../reply/run-result.js';
import { runReplySchema, toRunReply, type ResponseFormat } from '../reply/run-reply.js';
import type { CallEvent, RunContext, RunRequest } from '../attempt/types.js';

/** `deadlineAt`: the batch's, `signal`: the client's cancel and the shutdown, `meta`: passed to every job. */
interface BatchOptions extends Pick<RunContext, 'deadlineAt' | 'signal' | 'meta'> {
  /** Jobs running at once (the batch's own limit, within the server's). */
  readonly concurrency: number;
  /** The batch's id (its jobs' `batch_id`, and its job's id once it is handed over). */
  readonly batchId: string;
  /** Told each job's result as it ends. */
  readonly onResult?: (index: number, result: RunResult) => void;
  /** End the batch once this many jobs are ok: the others are cancelled, and nothing of them is counted. */
  readonly returnWhen?: number;
}

/** The counts of a batch; the concise reply leaves out the counts that are 0 (all but total and ok). */
const batchSummarySchema = z.object({
  total: z.number().int(),
  ok: z.number().int(),
  failed: z.number().int().optional(),
  timed_out: z.number().int().optional(),
  escalated: z.number().int().optional(),
  not_started: z.number().int().optional(),
  cancelled: z.number().int().optional(),
  escalate: z.boolean().describe('true if any job escalated: stop retrying those tasks and hand them upwards'),
  running: z.number().int().optional().describe('jobs still running (a batch collected before it ended)'),
});

export type BatchSummary = Omit<Required<z.infer<typeof batchSummarySchema>>, 'running'>;

/** A batch as the agent reads it: the summary and what to do first, then one run reply per job. */
export const batchReplySchema = z.object({
  job_id: z.string().optional(),
  summary: batchSummarySchema,
  next: z.string().optional(),
  results: z.array(runReplySchema).describe("one per job, in the jobs' order"),
  batch_id: z.string().optional().describe('detailed only: shared by every runs.jsonl line of this call'),
});

export type BatchReply = z.infer<typeof batchReplySchema>;

export interface BatchResult {
  readonly batch_id: string;
  readonly results: RunResult[];
  readonly summary: BatchSummary;
}

/** Live counts of a batch, for progress messages. */
export interface BatchProgress {
  done: number;
  running: number;
  readonly total: number;
}

/** What runs a batch's jobs: the server's calls. */
interface BatchRunner {
  run(request: RunRequest, context: RunContext): Promise<RunResult>;
  /** A job that never started because the batch deadline passed: logged, never spawned. */
  notStarted(request: RunRequest, context: RunContext): Promise<RunResult>;
  /** The reply naming these results is built: the grace of the answer files they name starts now. */
  replied(results: readonly RunResult[]): Promise<void>;
}

/**
 * Run every job through the same service as `ollama_run` (ledger, circuit, log, and the one
 * dispatcher queue, so a batch is ordered by what Ollama has loaded like any other calls), at most
 * `concurrency` of them at once, sharing one batch id. At the deadline, running jobs end as timeouts
 * (their limits are cut to it) and jobs still waiting as `not_started`: the caller always gets one
 * result per job, in input order.
 */

export async function runBatch(
  service: BatchRunner,
  jobs: readonly RunRequest[],
  options: BatchOptions,
  progress: BatchProgress,
): Promise<BatchResult> {
  const { batchId } = options;
  const late = () => options.deadlineAt !== undefined && Date.now() >= options.deadlineAt;
  const running = new Set<number>();
  // `returnWhen` ok jobs end the rest, cancelled: the caller has what it asked for.
  const rest = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, rest.signal]) : rest.signal;
  let ok = 0;
  const job = async (request: RunRequest, index: number): Promise<RunResult> => {
    const context: RunContext = {
      batchId,
      batchLimit: Math.max(1, options.concurrency),
      // Every job's answer shares the one reply.
      replyShare: jobs.length,
      signal,
      deadlineAt: options.deadlineAt,
      meta: options.meta,
      listen: (event) => {
        if (RUNNING_EVENTS.has(event.type)) running.add(index);
        else running.delete(index);
        progress.running = running.size;
      },
    };
    const result = late() ? await service.notStarted(request, context) : await service.run(request, context);
    running.delete(index);
    progress.running = running.size;
    progress.done += 1;
    options.onResult?.(index, result);
    if (result.metadata.ok && (ok += 1) === options.returnWhen) rest.abort(new Error('return_when reached'));
    return result;
  };
  const results = await Promise.all(jobs.map(job));
  // The one reply of every job is built next: the grace of the answer files it names starts now.
  await service.replied(results);
  return { batch_id: batchId, results, summary: summarize(results) };
}

/** After one of these events a job has its model process running. */
const RUNNING_EVENTS: ReadonlySet<CallEvent['type']> = new Set(['started', 'first_byte', 'output']);

export function summarize(results: readonly RunResult[]): BatchSummary {
  const count = (test: (r: RunResult) => boolean) => results.filter(test).length;
  const escalated = count((r) => r.metadata.escalate);
  return {
    total: results.length,
    ok: count((r) => r.metadata.ok),
    failed: count((r) => !r.metadata.ok),
    timed_out: count((r) => r.metadata.status === 'timeout' || r.metadata.status === 'start_timeout'),
    escalated,
    not_started: count((r) => r.metadata.status === 'not_started'),
    cancelled: count((r) => r.metadata.status === 'cancelled'),
    escalate: escalated > 0,
  };
}

/**
 * A batch collected before it ended: the jobs that ended (`null` for one still running), their
 * counts with how many still run, and how to collect the rest.
 */
export function toRunningBatchReply(
  batchId: string,
  results: readonly (RunResult | null)[],
  format: ResponseFormat,
  jobId: string,
): BatchReply {
  const ended = results.filter((result): result is RunResult => result !== null);
  const reply = toBatchReply({ batch_id: batchId, results: ended, summary: summarize(ended) }, format);
  const collect = `Still running: collect the rest with ollama_wait {"job_id": "${jobId}"}.`;
  return {
    job_id: jobId,
    summary: { ...reply.summary, total: results.length, running: results.length - ended.length },
    next: reply.next === undefined ? collect : `${reply.next} ${collect}`,
    results: results.map((result) =>
      result === null ? { ok: false, status: 'running', escalate: false, output: '' } : toRunReply(result, format),
    ),
    ...(format === 'detailed' ? { batch_id: batchId } : {}),
  };
}

/** The reply of a batch in either format. Pure: each job's reply is its run's (see toRunReply). */
export function toBatchReply(batch: BatchResult, format: ResponseFormat): BatchReply {
  const next = batchNextStep(batch.results);
  const summary =
    format === 'detailed'
      ? batch.summary
      : (Object.fromEntries(
          Object.entries(batch.summary).filter(([key, value]) => value !== 0 || key === 'total' || key === 'ok'),
        ) as BatchReply['summary']);
  return {
    summary,
    ...(next !== null ? { next } : {}),
    results: batch.results.map((result) => toRunReply(result, format)),
    ...(format === 'detailed' ? { batch_id: batch.batch_id } : {}),
  };
}

/** Which jobs must stop and escalate, and which failed otherwise; null when every job is ok. */
function batchNextStep(results: readonly RunResult[]): string | null {
  const jobs = (test: (r: RunResult) => boolean) => results.flatMap((r, index) => (test(r) ? [index] : []));
  const escalated = jobs((r) => r.metadata.escalate);
  const failed = jobs((r) => !r.metadata.ok && !r.metadata.escalate);
  const sentences: string[] = [];
  if (escalated.length > 0) {
    sentences.push(
      `Stop: do not retry ${namedJobs(results, escalated)}; escalate ${escalated.length === 1 ? 'it' : 'them'} to a human or a stronger model (each job's next says why).`,
    );
  }
  if (failed.length > 0) {
    const which = namedJobs(results, failed);
    sentences.push(
      `${which[0]!.toUpperCase()}${which.slice(1)} failed: do what ${failed.length === 1 ? 'its' : "each one's"} next says.`,
    );
  }
  return sentences.length === 0 ? null : sentences.join(' ');
}

/**
 * How a batch's prose names a job: by its task id when it has one (`task "fm-7a"`), else by its place
 * in the call, counted from 1 (`job 2`). The text and the structured content use the same names.
 */
export function jobName(result: RunResult, index: number): string {
  return result.metadata.task_id ? `task "${result.metadata.task_id}"` : `job ${index + 1}`;
}

/** Jobs named in one phrase: `task "a"`, `tasks "a", "b"`, `jobs 2, 5`, `tasks "a", "b" and job 3`. */
function namedJobs(results: readonly RunResult[], indexes: readonly number[]): string {
  const tasks = [...new Set(indexes.flatMap((i) => results[i]!.metadata.task_id || []))].map((task) => `"${task}"`);
  const places = indexes.filter((i) => !results[i]!.metadata.task_id).map((i) => String(i + 1));
  const phrase = (noun: string, names: string[]) => `${noun}${names.length > 1 ? 's' : ''} ${names.join(', ')}`;
  return [tasks.length > 0 ? phrase('task', tasks) : null, places.length > 0 ? phrase('job', places) : null]
    .filter((part) => part !== null)
    .join(' and ');
}
