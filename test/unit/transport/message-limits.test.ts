import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES } from '../../../src/transport/message-limits.js';
import { MAX_FORMAT_SCHEMA_CHARS, MAX_PROMPT_CHARS } from '../../../src/tools/ollama-run.js';
import { MAX_BATCH_JOBS, ollamaRunManyInputSchema } from '../../../src/tools/ollama-run-many.js';
import { MAX_BATCH_PROMPT_CHARS } from '../../../src/tools/shared-fields.js';
import { MODEL_NAME_MAX_LENGTH } from '../../../src/ollama/model-name.js';

/**
 * The largest ollama_run_many call the schemas accept, in the costliest encoding a JSON.stringify
 * client produces: every prompt character a control character (`\u0001`, 6 bytes), every format
 * character a 3-byte one, every other field at its longest.
 */
function worstCaseJobs(promptChars: number): Record<string, unknown>[] {
  const formatKey = '€'.repeat(MAX_FORMAT_SCHEMA_CHARS - '{"":1}'.length);
  const jobs: Record<string, unknown>[] = [];
  let left = promptChars;
  for (let i = 0; i < MAX_BATCH_JOBS; i += 1) {
    const chars = Math.max(1, Math.min(MAX_PROMPT_CHARS, left - (MAX_BATCH_JOBS - 1 - i)));
    left -= chars;
    jobs.push({
      model: 'a'.repeat(MODEL_NAME_MAX_LENGTH),
      prompt: `x${'\u0001'.repeat(chars - 1)}`,
      task_id: 't'.repeat(128),
      retry_count: 1000,
      max_retries: 100,
      timeout_ms: 3_600_000,
      format: { [formatKey]: 1 },
      think: 'medium',
      keepalive: '1'.repeat(31) + 'h',
      include_thinking: false,
      allow_pull: false,
    });
  }
  return jobs;
}

/** Bytes of the tools/call message carrying these arguments, as the SDK client writes it (job by job, to spare memory). */
function messageBytes(jobs: Record<string, unknown>[], extra: Record<string, unknown>): number {
  const envelope = JSON.stringify({
    method: 'tools/call',
    params: { name: 'ollama_run_many', arguments: { jobs: [], ...extra }, _meta: { progressToken: 2 ** 53 - 1 } },
    jsonrpc: '2.0',
    id: 2 ** 53 - 1,
  });
  const jobBytes = jobs.reduce((sum, job) => sum + Buffer.byteLength(JSON.stringify(job), 'utf8') + 1, -1);
  return Buffer.byteLength(envelope, 'utf8') + jobBytes + 1; // + the newline
}

describe('the message limit holds every call the schemas allow', () => {
  it('the largest valid ollama_run_many fits in one stdio message and one HTTP body', () => {
    const jobs = worstCaseJobs(MAX_BATCH_PROMPT_CHARS);
    const args = { jobs, concurrency: 8, deadline_ms: 3_600_000 };
    expect(ollamaRunManyInputSchema.safeParse(args).success).toBe(true);
    const bytes = messageBytes(jobs, { concurrency: 8, deadline_ms: 3_600_000 });
    expect(bytes).toBeGreaterThan(0.8 * MAX_MESSAGE_BYTES); // the case is really near the limit
    expect(bytes).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  });

  it('one prompt character more is refused by the schema, with a message saying what to do', () => {
    const jobs = worstCaseJobs(MAX_BATCH_PROMPT_CHARS + 1);
    const result = ollamaRunManyInputSchema.safeParse({ jobs });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((issue) => issue.message).join('\n')).toContain(
      `the prompts of one call must total at most ${MAX_BATCH_PROMPT_CHARS} characters (split the jobs into several calls), got ${MAX_BATCH_PROMPT_CHARS + 1}`,
    );
  });

  it('a keepalive cannot grow without bound', () => {
    const job = { model: 'llama3.2', prompt: 'x', keepalive: `${'1'.repeat(40)}h` };
    expect(ollamaRunManyInputSchema.safeParse({ jobs: [job] }).success).toBe(false);
  });
});
