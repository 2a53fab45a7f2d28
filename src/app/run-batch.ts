import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { RunResult } from './run-result.js';
import type { RunRequest, RunService } from './run-service.js';

export interface BatchOptions {
  /** Jobs running at once (already capped by the caller at the server's limit). */
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
 * Run every job through the same service as `ollama_run` (ledger, circuit, log), at most
 * `concurrency` at once, sharing one batch id. At the deadline, running jobs end as timeouts
 * (their timeouts are cut to it) and jobs that never started are reported as `not_started`:
 * the caller always gets one result per job, in input order.
 */
export async function runBatch(
  service: RunService,
  jobs: readonly RunRequest[],
  options: BatchOptions,
  progress: BatchProgress = { done: 0, running: 0, total: jobs.length },
): Promise<BatchResult> {
  const batchId = randomUUID();
  const clock = options.clock ?? Date.now;
  const results = new Array<RunResult>(jobs.length);
  let next = 0;
  const context = {
    batchId,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.deadlineAt !== undefined ? { deadlineAt: options.deadlineAt } : {}),
  };
  const late = () => options.deadlineAt !== undefined && clock() >= options.deadlineAt;

  const worker = async () => {
    while (next < jobs.length) {
      const index = next;
      next += 1;
      const job = jobs[index]!;
      if (late()) {
        results[index] = await service.notStarted(job, context);
      } else {
        progress.running += 1;
        try {
          results[index] = await service.run(job, context);
        } finally {
          progress.running -= 1;
        }
      }
      progress.done += 1;
      options.onJobDone?.(progress.done);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, jobs.length)) }, worker));
  return { batch_id: batchId, results, summary: summarize(results) };
}

export function summarize(results: readonly RunResult[]): BatchSummary {
  const count = (test: (r: RunResult) => boolean) => results.filter(test).length;
  const escalated = count((r) => r.metadata.escalate);
  return {
    total: results.length,
    ok: count((r) => r.metadata.ok),
    failed: count((r) => !r.metadata.ok),
    timed_out: count((r) => r.metadata.status === 'timeout'),
    escalated,
    not_started: count((r) => r.metadata.status === 'not_started'),
    cancelled: count((r) => r.metadata.status === 'cancelled'),
    escalate: escalated > 0,
  };
}
