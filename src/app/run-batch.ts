import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { RunResult } from './run-result.js';
import type { RunContext, RunRequest, RunService } from './run-service.js';
import type { RunPhase } from './run-progress.js';

export interface BatchOptions {
  /** Jobs running at once (the batch's own limit, within the server's). */
  readonly concurrency: number;
  /** Epoch ms by which the batch must be over. */
  readonly deadlineAt?: number;
  /** Client cancel / shutdown. */
  readonly signal?: AbortSignal;
  readonly clock?: () => number;
  /** Called after each job settles, for progress. */
  readonly onJobDone?: (done: number) => void;
}

export const batchSummarySchema = z.object({
  total: z.number().int(),
  ok: z.number().int(),
  failed: z.number().int(),
  timed_out: z.number().int(),
  escalated: z.number().int(),
  not_started: z.number().int(),
  cancelled: z.number().int(),
  escalate: z.boolean().describe('true if any job escalated: stop retrying those tasks and hand them upwards'),
});

export type BatchSummary = z.infer<typeof batchSummarySchema>;

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
export async function runBatch(
  service: RunService,
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
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.deadlineAt !== undefined ? { deadlineAt: options.deadlineAt } : {}),
      onPhase: (event) => {
        if (RUNNING_PHASES.has(event.phase)) running.add(index);
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
  return { batch_id: batchId, results, summary: summarize(results) };
}

/** A job in one of these phases has its model process running. */
const RUNNING_PHASES: ReadonlySet<RunPhase['phase']> = new Set(['starting', 'running']);

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
