import { describe, expect, it } from 'vitest';
import type { BatchResult } from '../../src/app/call/run-batch.js';
import { maxConcurrent, readRuns, readRunTrace, startTestServer, useServer, type RunningServer } from './harness.js';

async function runMany(
  server: RunningServer,
  args: Record<string, unknown>,
  onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
) {
  // The detailed reply: these tests read every job's whole record.
  const result = await server.client.callTool(
    { name: 'ollama_run_many', arguments: { response_format: 'detailed', ...args } },
    undefined,
    {
      timeout: 60_000,
      ...(onprogress ? { onprogress } : {}),
    },
  );
  return {
    ...(result.structuredContent as unknown as BatchResult),
    isError: result.isError === true,
    text: JSON.stringify(result.content),
  };
}

describe('ollama_run_many', () => {
  const server = useServer({
    OLLAMA_MCP_CONCURRENCY: '4',
    OLLAMA_MCP_BREAKER_THRESHOLD: '100',
    OLLAMA_MCP_PROGRESS_INTERVAL_MS: '200',
  });

  it('mixed jobs give full results in input order, with a summary, under one batch_id', async () => {
    const batch = await runMany(server, {
      jobs: [
        { model: 'llama3.2', prompt: 'first' },
        { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'batch-fail' },
        { model: 'no-such-model:1b', prompt: 'missing' },
        { model: 'qwen2.5-coder:7b', prompt: 'fourth' },
      ],
    });
    expect(batch.results.map((r) => r.metadata.status)).toEqual(['ok', 'crashed', 'model_not_found', 'ok']);
    expect(batch.results[0]!.output).toBe('fake answer from llama3.2: first');
    expect(batch.results[3]!.output).toBe('fake answer from qwen2.5-coder:7b: fourth');
    expect(batch.summary).toEqual({
      total: 4,
      ok: 2,
      failed: 2,
      timed_out: 0,
      escalated: 1,
      not_started: 0,
      cancelled: 0,
      escalate: true,
    });
    expect(batch.isError).toBe(true);
    expect(batch.text).toContain('ESCALATE');
    const lines = readRuns(server.sandbox).filter((r) => r.batch_id === batch.batch_id);
    expect(lines).toHaveLength(4);
    expect(new Set(lines.map((r) => r.tool))).toEqual(new Set(['ollama_run_many']));
  });

  it('names each job by its task id, else counts from 1, the same in the text and the structured content', async () => {
    const result = await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        jobs: [
          { model: 'llama3.2', prompt: 'fine' },
          { model: 'no-such-model:1b', prompt: 'missing, no task' },
          { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'names-b' },
          { model: 'no-such-model:1b', prompt: 'missing', task_id: 'names-a' },
          { model: 'llama3.2', prompt: 'broken, no task @fake:exit=1' },
        ],
      },
    });
    const structured = result.structuredContent as { next: string; results: { escalate: boolean }[] };
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    expect(structured.results.map((r) => r.escalate)).toEqual([false, true, false, true, false]);
    const next =
      'Stop: do not retry task "names-a" and job 2; escalate them to a human or a stronger model (each job\'s next says why). ' +
      'Task "names-b" and job 5 failed: do what each one\'s next says.';
    expect(structured.next).toBe(next);
    expect(text).toContain(`NEXT: ${next}`);
    expect(text).toContain(
      'ESCALATE: STOP RETRYING these and hand them upwards: job 2: model_not_found; task "names-a": model_not_found.',
    );
    expect(text.match(/^--- job .* ---$/gm)).toEqual([
      '--- job 1 of 5 ---',
      '--- job 2 of 5 ---',
      '--- job 3 of 5 (task "names-b") ---',
      '--- job 4 of 5 (task "names-a") ---',
      '--- job 5 of 5 ---',
    ]);
    expect(text).not.toMatch(/\bjobs? 0\b/);
  });

  it('at the deadline, running jobs end as timeouts and jobs not started are reported as not started', async () => {
    const started = Date.now();
    const batch = await runMany(server, {
      concurrency: 2,
      deadline_ms: 3000,
      jobs: [
        { model: 'llama3.2', prompt: 'quick' },
        { model: 'llama3.2', prompt: 'answers slowly @fake:sleep_ms=4000' },
        { model: 'llama3.2', prompt: 'never begins @fake:hang' },
        { model: 'llama3.2', prompt: 'never reached' },
        { model: 'llama3.2', prompt: 'never reached either' },
      ],
    });
    expect(Date.now() - started).toBeLessThan(3000 + 3000);
    expect(batch.results).toHaveLength(5);
    expect(batch.results[0]!.metadata.status).toBe('ok');
    // Its answer had begun (at 2 s): the deadline stopped the answer.
    expect(batch.results[1]!.metadata).toMatchObject({ status: 'timeout', timed_out: true });
    // Its answer never began: the deadline stopped the wait for it.
    expect(batch.results[2]!.metadata).toMatchObject({ status: 'start_timeout' });
    expect(batch.results[2]!.metadata.error?.message).toContain(
      "the deadline (deadline_ms, or the batch's) passed before the model began to answer",
    );
    expect(batch.results.slice(3).map((r) => r.metadata.status)).toEqual(['not_started', 'not_started']);
    expect(batch.summary).toMatchObject({ total: 5, ok: 1, not_started: 2 });
    expect(batch.summary.timed_out + batch.summary.not_started).toBe(4);
    // Not-started jobs are logged too, with the batch id; they spawned nothing.
    expect(readRuns(server.sandbox).filter((r) => r.batch_id === batch.batch_id)).toHaveLength(5);
    const prompts = readRunTrace(server.sandbox)
      .filter((e) => e.event === 'prompt')
      .map((e) => e.prompt);
    expect(prompts.some((p) => p?.includes('never reached'))).toBe(false);
  });

  it('runs at most `concurrency` jobs at once and reports batch progress', async () => {
    const s = await startTestServer({ OLLAMA_MCP_CONCURRENCY: '8', OLLAMA_MCP_PROGRESS_INTERVAL_MS: '150' });
    const notes: { progress: number; total?: number; message?: string }[] = [];
    const batch = await runMany(
      s,
      {
        concurrency: 2,
        jobs: Array.from({ length: 6 }, (_, i) => ({ model: 'llama3.2', prompt: `job ${i} @fake:sleep_ms=300` })),
      },
      (p) => notes.push(p),
    );
    expect(batch.summary.ok).toBe(6);
    expect(maxConcurrent(readRunTrace(s.sandbox))).toBe(2);
    expect(notes.length).toBeGreaterThan(2);
    expect(notes.every((n) => n.total === 6)).toBe(true);
    expect(notes.at(-1)!.message).toMatch(/\d\/6 jobs done/);
    for (let i = 1; i < notes.length; i += 1) expect(notes[i]!.progress).toBeGreaterThan(notes[i - 1]!.progress);
  });

  it('a bad job rejects the whole call, naming the job, and spawns nothing', async () => {
    const before = readRunTrace(server.sandbox).filter((e) => e.event === 'start').length;
    const batch = await runMany(server, {
      jobs: [
        { model: 'llama3.2', prompt: 'fine' },
        { model: '-x', prompt: 'bad' },
      ],
    });
    expect(batch.isError).toBe(true);
    expect(batch.results).toEqual([]);
    expect(batch.text).toContain('`jobs.1.model`');
    expect(readRunTrace(server.sandbox).filter((e) => e.event === 'start').length).toBe(before);
  });
});
