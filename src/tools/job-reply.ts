import type { Config } from '../config/config.js';
import type { ResponseFormat, RunReply } from '../app/reply/run-reply.js';
import type { RunResult } from '../app/reply/run-result.js';
import type { RunService } from '../app/run-service.js';
import { startHeartbeat, type ProgressReport } from './progress.js';
import { replyWithinMs } from './reply-within.js';
import type { AnyToolDefinition, ToolExtra, ToolOutcome } from './tool-definition.js';

/** Who may collect the jobs a connection starts, and what its client is called (for the reply budget). */
export interface JobScope {
  /** `local` for a stdio client; over HTTP the token's digest. */
  readonly owner: string;
  /** The client's `clientInfo.name`, once it initialized. */
  readonly clientName: () => string | undefined;
}

/** The result `metadata` of the specification this server was made from: what programs read. */
export function specMetadata({ metadata }: RunResult) {
  const { status, timed_out, duration_ms, retry_count, escalate, escalation_reason } = metadata;
  return { status, timed_out, duration_ms, retry_count, escalate, escalation_reason };
}

/** A run that goes on as a job: not an error (nothing failed), the job to collect, and what it is doing now. */
export function presentRunning(
  jobId: string,
  progress: string,
  budgetMs: number | null,
  elapsedMs: number,
): ToolOutcome<RunReply> {
  // Collect it, and do not start the task again meanwhile.
  const next = `Still running: collect the result with ollama_wait {"job_id": "${jobId}"}; do not run the task again meanwhile.`;
  const why =
    budgetMs === null
      ? ''
      : ` within reply_within_ms (${budgetMs < 10_000 ? `${budgetMs} ms` : `${Math.round(budgetMs / 1000)} s`})`;
  const text = [
    `RUNNING: no answer yet${why}; the run goes on as job ${jobId}. Nothing failed and nothing is escalated.`,
    `NOW: ${progress}`,
    `NEXT: ${next}`,
  ].join('\n');
  const duration_ms = Math.round(elapsedMs);
  const metadata = {
    status: 'running',
    timed_out: false,
    duration_ms,
    retry_count: null,
    escalate: false,
    escalation_reason: null,
  };
  return {
    structured: { ok: false, status: 'running', escalate: false, job_id: jobId, next, progress, output: '' },
    text,
    isError: false,
    fields: { metadata: { ...metadata, job_id: jobId } },
  };
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

/** Work a tool call started (a run, a batch): it may outlast the reply as a job. */
export interface Work<R, Out> {
  readonly result: Promise<R>;
  /** Where it stands: the heartbeat's report. */
  progress(): ProgressReport;
  /** Keep it as a job of `owner`, which outlives the request: recorded now, its result kept when it ends. */
  handOver(owner: string, cancel: AbortController): Promise<void>;
  /** The reply naming the job, once handed over. */
  running(format: ResponseFormat, budgetMs: number): ToolOutcome<Out>;
}

/** How to start the work: as job `id` (an MCP task's) or under an id of its own, aborted by `signal`. */
export interface WorkStart {
  readonly id?: string;
  readonly signal: AbortSignal;
  readonly meta: ToolExtra['_meta'];
}

/**
 * `handle` and `startJob` of a tool whose work may go on as a job: `handle` answers within the reply
 * budget, else hands the work over; `startJob` (an MCP task) hands it over at once.
 */
export function jobHandlers<In extends { response_format?: ResponseFormat; reply_within_ms?: number }, R, Out>(
  service: () => Promise<RunService>,
  config: Config,
  scope: JobScope,
  start: (runs: RunService, input: In, how: WorkStart) => Work<R, Out>,
  present: (result: R, format: ResponseFormat) => ToolOutcome<Out>,
): Pick<AnyToolDefinition, 'handle' | 'startJob'> {
  return {
    async handle(input: In, extra) {
      const runs = await service();
      const request = untilHandedOver(extra.signal);
      const work = start(runs, input, { signal: request.controller.signal, meta: extra._meta });
      const stop = startHeartbeat(extra, config.progressIntervalMs, () => work.progress());
      const format = input.response_format ?? 'concise';
      const budgetMs = replyWithinMs(input.reply_within_ms, config.replyWithinMs, scope.clientName());
      try {
        const result = await withinBudget(work.result, budgetMs);
        if (result !== null) return present(result, format);
        request.handOver();
        await work.handOver(scope.owner, request.controller);
        return work.running(format, budgetMs);
      } finally {
        request.handOver();
        stop();
      }
    },
    async startJob(input: In, extra, jobId) {
      const runs = await service();
      const cancel = new AbortController();
      const work = start(runs, input, { id: jobId, signal: cancel.signal, meta: extra._meta });
      await work.handOver(scope.owner, cancel);
      return { ended: work.result.then((result) => present(result, input.response_format ?? 'concise')) };
    },
  };
}
