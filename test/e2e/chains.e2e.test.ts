// Fallback chains through the built server: a call falls through models that cannot serve it (a
// broken one, a missing one, one whose circuit is open) to one that can; every model's attempt is
// its own runs.jsonl line linked by one chain_id; the task's ledger counts the call once.
import { describe, expect, it } from 'vitest';
import { readRuns, readRunTrace, useServer } from './harness.js';

const INSTALLED = ['good:1b', 'good2:1b', 'broken:1b', 'broken2:1b', 'broken3:1b', 'flaky:1b', 'slow:1b', 'slow2:1b'];

describe('fallback chains', () => {
  const server = useServer({
    FAKE_OLLAMA_MODELS: INSTALLED.join(','),
    FAKE_OLLAMA_BROKEN_MODELS: 'broken:1b,broken2:1b,broken3:1b,flaky:1b',
    OLLAMA_MCP_BREAKER_THRESHOLD: '3',
    OLLAMA_MCP_BREAKER_COOLDOWN_MS: '600000',
  });

  /** `ollama run` processes started for a model (the fake's trace). */
  const spawnsOf = (model: string) =>
    readRunTrace(server.sandbox).filter((e) => e.event === 'start' && e.argv?.[0] === 'run' && e.argv[1] === model).length;
  const linesOf = (chainId: string) => readRuns(server.sandbox).filter((r) => r.chain_id === chainId);

  it('falls through a broken and a missing model to a good one: one call, three lines, one chain_id', async () => {
    const r = await server.run({
      model: 'broken:1b',
      fallback_models: ['missing:1b', 'good:1b'],
      prompt: 'write a haiku',
      task_id: 'chain-1',
    });
    expect(r.isError).toBe(false);
    expect(r.output).toBe('fake answer from good:1b: write a haiku');
    const m = r.metadata;
    expect(m).toMatchObject({ status: 'ok', model: 'good:1b', retry_count: 0, escalate: false, busy_retries: 0 });
    expect(m.fallback.map(({ model, status }) => ({ model, status }))).toEqual([
      { model: 'broken:1b', status: 'crashed' },
      { model: 'missing:1b', status: 'model_not_found' },
    ]);
    expect(m.chain_id).toEqual(expect.any(String));
    expect(r.text).toContain('after broken:1b (crashed), missing:1b (model_not_found) could not serve it');

    const lines = linesOf(m.chain_id!);
    expect(lines.map((l) => [l.model, l.status, l.chain_step, l.will_retry, l.retry_count, l.escalate])).toEqual([
      ['broken:1b', 'crashed', 0, true, 0, false],
      ['missing:1b', 'model_not_found', 1, true, 0, false],
      ['good:1b', 'ok', 2, false, 0, false],
    ]);
    expect(lines.map((l) => l.run_id)).toEqual([...m.fallback.map((f) => f.run_id), m.run_id]);
    // The broken model's circuit took its failure; the missing one was never spawned (preflight).
    expect(lines[0]).toMatchObject({ circuit: { consecutive_failures: 1 }, error: expect.stringContaining('llama-server') });
    expect(spawnsOf('missing:1b')).toBe(0);

    // The ledger counted one successful call: a failing call next is the task's first failure.
    const next = await server.run({ model: 'broken:1b', fallback_models: [], prompt: 'again', task_id: 'chain-1' });
    expect(next.metadata).toMatchObject({ status: 'crashed', retry_count: 0, chain_id: null, fallback: [] });
  });

  it('skips a model whose circuit is open without spawning it', async () => {
    for (let i = 0; i < 3; i += 1) await server.run({ model: 'flaky:1b', prompt: 'x' });
    const spawnsBefore = spawnsOf('flaky:1b');
    const r = await server.run({ model: 'flaky:1b', fallback_models: ['good2:1b'], prompt: 'hello', task_id: 'chain-2' });
    expect(r.metadata).toMatchObject({ status: 'ok', model: 'good2:1b', escalate: false, retry_count: 0 });
    expect(r.metadata.fallback).toEqual([{ model: 'flaky:1b', status: 'circuit_open', run_id: expect.any(String) }]);
    expect(spawnsOf('flaky:1b')).toBe(spawnsBefore);
    const [skipped] = linesOf(r.metadata.chain_id!);
    expect(skipped).toMatchObject({ status: 'circuit_open', will_retry: true, escalate: false, duration_ms: 0 });
  });

  it("a last model whose circuit is open does not make the task escalate: the primary's failure is the result, and counted", async () => {
    // flaky:1b's circuit is open (the test before). A chain ending in it must not turn the primary's
    // retryable failure into an escalation, nor leave the failure uncounted.
    const call = () =>
      server.run({ model: 'good2:1b', fallback_models: ['flaky:1b'], prompt: 'fails @fake:exit=1', task_id: 'last-open' });
    const first = await call();
    expect(first.metadata).toMatchObject({
      status: 'crashed',
      model: 'good2:1b',
      escalate: false,
      retryable: true,
      retry_count: 0,
      fallback: [],
    });
    const second = await call();
    expect(second.metadata).toMatchObject({ status: 'crashed', escalate: false, retry_count: 1 });
    expect(
      readRuns(server.sandbox)
        .filter((l) => l.task_id === 'last-open')
        .map((l) => [l.model, l.will_retry]),
    ).toEqual([
      ['good2:1b', false],
      ['good2:1b', false],
    ]);
  });

  it('a chain in which every model fails counts one failed attempt per call and escalates after max_retries calls', async () => {
    const call = {
      model: 'broken2:1b',
      fallback_models: ['broken3:1b'],
      prompt: 'x',
      task_id: 'chain-3',
      max_retries: 1,
    };
    const first = await server.run(call);
    expect(first.metadata).toMatchObject({ status: 'crashed', model: 'broken3:1b', retry_count: 0, escalate: false });
    expect(first.metadata.fallback.map((f) => f.status)).toEqual(['crashed']);
    expect(first.metadata.error?.message).toMatch(/^models tried before: broken2:1b \(crashed\); broken3:1b: .*llama-server/);

    const second = await server.run(call);
    expect(second.metadata).toMatchObject({
      status: 'crashed',
      retry_count: 1,
      escalate: true,
      escalation_reason: 'max_retries_exceeded',
    });
    expect(second.text).toContain('ESCALATE: STOP RETRYING TASK "chain-3"');
    expect(second.text).toContain('models tried before: broken2:1b (crashed)');
    // Each model's circuit had its own verdict: two failures each, below the threshold of 3.
    const lines = linesOf(second.metadata.chain_id!);
    expect(lines.map((l) => [l.model, (l.circuit as { consecutive_failures: number }).consecutive_failures])).toEqual([
      ['broken2:1b', 2],
      ['broken3:1b', 2],
    ]);
    expect(lines.map((l) => l.escalate)).toEqual([false, true]);
  });

  it('a model that never begins ends the chain without deadline_ms; with one, the chain goes on within it', async () => {
    // The fake's spinner turns 10 s before an answer would begin: each model passes its start allowance.
    const slow = { model: 'slow:1b', fallback_models: ['slow2:1b'], prompt: 'x @fake:sleep_ms=20000', start_timeout_ms: 1_500 };
    const alone = await server.run(slow);
    expect(alone.metadata).toMatchObject({ status: 'start_timeout', model: 'slow:1b', fallback: [] });
    expect(linesOf(alone.metadata.chain_id!)).toHaveLength(1);

    const deadlineMs = 3_000;
    const startedAt = Date.now();
    const within = await server.run({ ...slow, deadline_ms: deadlineMs });
    const elapsed = Date.now() - startedAt;
    expect(within.metadata).toMatchObject({ status: 'start_timeout', model: 'slow2:1b' });
    expect(within.metadata.fallback.map((f) => f.status)).toEqual(['start_timeout']);
    // The first model waited its start allowance, the second only what the deadline left.
    const lines = linesOf(within.metadata.chain_id!);
    expect(lines[0]!.duration_ms as number).toBeGreaterThanOrEqual(1_500);
    expect(lines[0]!.error).toContain('did not begin to answer within 1500 ms');
    expect(lines[1]!.error).toContain('the deadline (deadline_ms');
    expect(elapsed).toBeLessThan(deadlineMs + 3_000); // the kill grace and process start-ups, on a busy machine
  });

  it('each ollama_run_many job has its own chain', async () => {
    const result = await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        response_format: 'detailed',
        jobs: [
          { model: 'broken:1b', fallback_models: ['good:1b'], prompt: 'one' },
          { model: 'good2:1b', prompt: 'two' },
        ],
      },
    });
    const batch = result.structuredContent as { batch_id: string; results: { metadata: Record<string, unknown> }[] };
    expect(batch.results.map((r) => [r.metadata.status, r.metadata.model, (r.metadata.fallback as unknown[]).length])).toEqual([
      ['ok', 'good:1b', 1],
      ['ok', 'good2:1b', 0],
    ]);
    const chainId = batch.results[0]!.metadata.chain_id as string;
    expect(linesOf(chainId).map((l) => [l.batch_id, l.tool, l.chain_step])).toEqual([
      [batch.batch_id, 'ollama_run_many', 0],
      [batch.batch_id, 'ollama_run_many', 1],
    ]);
    expect(batch.results[1]!.metadata.chain_id).toBeNull();
  });

  it('refuses a bad fallback_models before spawning anything, naming the entry', async () => {
    const cases = [
      [{ fallback_models: ['good:1b', 'library/good:1b'] }, 'fallback_models.1', 'listed twice'],
      [{ fallback_models: ['broken:1b'] }, 'fallback_models.0', "the call's own model"],
      [{ fallback_models: ['bad name'] }, 'fallback_models.0', 'must be an Ollama model name'],
      [{ fallback_models: ['a', 'b', 'c', 'd', 'e', 'f'] }, 'fallback_models', 'at most 5'],
    ] as const;
    const before = readRunTrace(server.sandbox).length;
    for (const [args, where, message] of cases) {
      const r = await server.run({ model: 'broken:1b', prompt: 'x', ...args });
      expect(r.metadata.status).toBe('invalid_input');
      expect(r.metadata.error?.message).toContain(where);
      expect(r.metadata.error?.message).toContain(message);
    }
    expect(readRunTrace(server.sandbox).length).toBe(before);
  });
});
