import * as z from 'zod';
import type { Config } from '../config/config.js';
import { formatElapsed, startHeartbeat } from '../mcp/progress.js';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';
import { batchSummarySchema, runBatch, summarize, type BatchProgress, type BatchResult } from '../app/run-batch.js';
import { runResultSchema } from '../app/run-result.js';
import type { RunService } from '../app/run-service.js';
import { ollamaRunInputSchema, renderRunResult, toRunRequest } from './ollama-run.js';
import { MAX_BATCH_PROMPT_CHARS, timeoutField } from './shared-fields.js';

export const MAX_BATCH_JOBS = 100;
const MAX_BATCH_CONCURRENCY = 8;

export const ollamaRunManyInputSchema = z.strictObject({
  jobs: z
    .array(ollamaRunInputSchema)
    .min(1, 'must hold at least one job')
    .max(MAX_BATCH_JOBS, `must hold at most ${MAX_BATCH_JOBS} jobs`)
    // Keeps every valid call within one message (MAX_MESSAGE_BYTES): a larger batch is refused here, clearly.
    .refine((jobs) => totalPromptChars(jobs) <= MAX_BATCH_PROMPT_CHARS, {
      error: (issue) =>
        `the prompts of one call must total at most ${MAX_BATCH_PROMPT_CHARS} characters (split the jobs into several calls), got ${totalPromptChars(issue.input as { prompt: string }[])}`,
    })
    .describe(
      'The jobs, each with the same fields as ollama_run (model, prompt, task_id, ...). Results come back in this order.',
    ),
  concurrency: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_BATCH_CONCURRENCY, `must be at most ${MAX_BATCH_CONCURRENCY}`)
    .optional()
    .describe("Jobs running at once (default 3; never above the server's OLLAMA_MCP_CONCURRENCY)."),
  deadline_ms: timeoutField().describe(
    'Overall limit: jobs still running then are stopped (timeout), jobs not started are reported as not_started.',
  ),
});

export const batchResultSchema = z.object({
  batch_id: z.string().describe('shared by every runs.jsonl line of this call'),
  results: z.array(runResultSchema).describe("one { output, metadata } per job, in the jobs' order"),
  summary: batchSummarySchema,
});

type Input = z.output<typeof ollamaRunManyInputSchema>;

function totalPromptChars(jobs: readonly { prompt: string }[]): number {
  return jobs.reduce((sum, job) => sum + job.prompt.length, 0);
}

/** `service`: the run service, built on the first call (see App.services). */
export function ollamaRunManyTool(service: () => Promise<RunService>, config: Config): AnyToolDefinition {
  return {
    name: 'ollama_run_many',
    title: 'Run several local model jobs',
    description: [
      'Fan out several independent jobs (each like an ollama_run call) and get every result back in input order, with a summary.',
      'Jobs share the same retry ledger, circuit breakers and limits as ollama_run.',
      'With deadline_ms, you always get partial results: jobs still running at the deadline end as timeouts, jobs not started as not_started.',
      "Check summary.escalate and each job's metadata.escalate: escalated tasks must not be retried.",
    ].join(' '),
    inputSchema: ollamaRunManyInputSchema,
    outputSchema: batchResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handle(input: Input, extra) {
      const startedAt = performance.now();
      const progress: BatchProgress = { done: 0, running: 0, total: input.jobs.length };
      const stop = startHeartbeat(extra, config.progressIntervalMs, () => ({
        progress: progress.done,
        total: progress.total,
        message: `${progress.done}/${progress.total} jobs done, ${progress.running} running, ${
          progress.total - progress.done - progress.running
        } waiting, ${formatElapsed(performance.now() - startedAt)} elapsed`,
      }));
      try {
        const result = await runBatch(
          await service(),
          input.jobs.map(toRunRequest),
          {
            concurrency: Math.min(input.concurrency ?? 3, config.concurrency),
            signal: extra.signal,
            ...(input.deadline_ms !== undefined ? { deadlineAt: Date.now() + input.deadline_ms } : {}),
          },
          progress,
        );
        return present(result);
      } finally {
        stop();
      }
    },
    async onInvalidInput(problem) {
      await (await service()).rejectInvalid({}, problem, { tool: 'ollama_run_many' });
      const empty: BatchResult = { batch_id: '', results: [], summary: summarize([]) };
      return { structured: empty, text: `REJECTED (invalid_input), nothing was run. ${problem}`, isError: true };
    },
  };
}

function present(result: BatchResult): ToolOutcome<BatchResult> {
  const s = result.summary;
  const lines = [
    `Batch ${result.batch_id}: ${s.total} job(s): ${s.ok} ok, ${s.failed} failed (${s.timed_out} timed out, ${s.not_started} not started, ${s.cancelled} cancelled), ${s.escalated} escalated.`,
  ];
  if (s.escalate) {
    const tasks = result.results
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.metadata.escalate)
      .map(
        ({ r, i }) => `job ${i}${r.metadata.task_id ? ` (task "${r.metadata.task_id}")` : ''}: ${r.metadata.escalation_reason}`,
      );
    lines.push(`ESCALATE: STOP RETRYING these and hand them upwards: ${tasks.join('; ')}.`);
  }
  result.results.forEach((r, i) => lines.push(`--- job ${i} ---\n${renderRunResult(r)}`));
  return { structured: result, text: lines.join('\n\n'), isError: s.failed > 0 };
}
