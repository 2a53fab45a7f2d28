import type { RunReply } from '../app/reply/run-reply.js';
import type { RunResult } from '../app/reply/run-result.js';

/** Who may collect the jobs a connection starts, and what its client is called (for the reply budget). */
export interface JobScope {
  /** `local` for a stdio client; over HTTP the token's digest. */
  readonly owner: string;
  /** The client's `clientInfo.name`, once it initialized. */
  readonly clientName: () => string | undefined;
}

/** The result `metadata` of the specification this server was made from: what programs read. */
export interface SpecMetadata {
  readonly status: string;
  readonly timed_out: boolean;
  readonly duration_ms: number;
  readonly retry_count: number | null;
  readonly escalate: boolean;
  readonly escalation_reason: string | null;
  readonly job_id?: string;
}

export function specMetadata(result: RunResult): SpecMetadata {
  const m = result.metadata;
  return {
    status: m.status,
    timed_out: m.timed_out,
    duration_ms: m.duration_ms,
    retry_count: m.retry_count,
    escalate: m.escalate,
    escalation_reason: m.escalation_reason,
  };
}

export function runningMetadata(jobId: string, elapsedMs: number): SpecMetadata {
  return {
    status: 'running',
    timed_out: false,
    duration_ms: Math.round(elapsedMs),
    retry_count: null,
    escalate: false,
    escalation_reason: null,
    job_id: jobId,
  };
}

/** What the agent does with a job that goes on: collect it, and not start the task again meanwhile. */
export function collectStep(jobId: string): string {
  return `Still running: collect the result with ollama_wait {"job_id": "${jobId}"}; do not run the task again meanwhile.`;
}

/** A run that goes on past the reply: no verdict yet, the job to collect, and what it is doing now. */
export function runningReply(jobId: string, progress: string): RunReply {
  return { ok: false, status: 'running', escalate: false, job_id: jobId, next: collectStep(jobId), progress, output: '' };
}

export function runningText(jobId: string, progress: string, budgetMs: number | null): string {
  const why =
    budgetMs === null
      ? ''
      : ` within reply_within_ms (${budgetMs < 10_000 ? `${budgetMs} ms` : `${Math.round(budgetMs / 1000)} s`})`;
  return [
    `RUNNING: no answer yet${why}; the run goes on as job ${jobId}. Nothing failed and nothing is escalated.`,
    `NOW: ${progress}`,
    `NEXT: ${collectStep(jobId)}`,
  ].join('\n');
}

/**
 * Wait for `result` at most `budgetMs`: its value, or null when the budget passed first (the caller
 * then hands the work over as a job).
 */
export async function withinBudget<T>(result: Promise<T>, budgetMs: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), budgetMs);
  });
  try {
    return await Promise.race([result, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The work's own signal: it follows the request's (a client's cancel ends the work) until the work is
 * handed over as a job, which outlives the request; from then only the job's cancel aborts it.
 */
export function untilHandedOver(request: AbortSignal): { readonly controller: AbortController; readonly handOver: () => void } {
  const controller = new AbortController();
  const follow = () => controller.abort(request.reason);
  if (request.aborted) follow();
  else request.addEventListener('abort', follow, { once: true });
  return { controller, handOver: () => request.removeEventListener('abort', follow) };
}
