import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { RunResult } from '../reply/run-result.js';
import { runReplySchema, toRunReply, type ResponseFormat } from '../reply/run-reply.js';
import type { CallEvent, RunContext, RunRequest } from '../attempt/types.js';

interface BatchOptions {
  /** Jobs running at once (the batch's own limit, within the server's). */
  readonly concurrency: number;
  /** Epoch ms by which the batch must be over. */
  readonly deadlineAt?: number;
  /** Client cancel / shutdown. */
  readonly signal?: AbortSignal;
  /** The request's `_meta`, passed to every job (a `traceparent` arrives there). */
  readonly meta?: Readonly<Record<string, unknown>> | undefined;
  readonly clock?: () => number;
  /** Called after each job settles, for progress. */
  readonly onJobDone?: (done: number) => void;
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
});

export type BatchSummary = Required<z.infer<typeof batchSummarySchema>>;

/** A batch as the agent reads it: the summary and what to do first, then one run reply per job. */
export const batchReplySchema = z.object({
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

/**
 * Run every job through the same service as `ollama_run` (ledger, circuit, log, and the one
 * dispatcher queue, so a batch is ordered by what Ollama has loaded like any other calls), at most
 * `concurrency` of them at once, sharing one batch id. At the deadline, running jobs end as timeouts
 * (their limits are cut to it) and jobs still waiting as `not_started`: the caller always gets one
 * result per job, in input order.
 */
/** What runs a batch's jobs: the server's calls. */
interface BatchRunner {
  run(request: RunRequest, context: RunContext): Promise<RunResult>;
  /** A job that never started because the batch deadline passed: logged, never spawned. */
  notStarted(request: RunRequest, context: RunContext): Promise<RunResult>;
  /** The reply naming these results is built: the grace of the answer files they name starts now. */
  replied(results: readonly RunResult[]): Promise<void>;
}

export async function runBatch(
  service: BatchRunner,
  jobs: readonly RunRequest[],
  options: BatchOptions,
  progress: BatchProgress = { done: 0, running: 0, total: jobs.length },
): Promise<BatchResult> {
  const batchId = randomUUID();
  const clock = options.clock ?? Date.now;
  const late = () => options.deadlineAt !== undefined && clock() >= options.deadlineAt;
  const running = new Set<number>();
  const job = async (request: RunRequest, index: number): Promise<RunResult> => {
    const context: RunContext = {
      batchId,
      batchLimit: Math.max(1, options.concurrency),
      // Every job's answer shares the one reply.
      replyShare: jobs.length,
      signal: options.signal,
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
    options.onJobDone?.(progress.done);
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
