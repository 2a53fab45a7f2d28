// Escalation on the paths an attack found wrong: a fallback chain must never make a task escalate
// sooner (nor leave its failure uncounted), and once a task escalated only a success or ollama_reset
// ends that. Each case is one an agent would meet: a tiers-file fallback missing on this machine, a
// cloud fallback the account may not use, a fallback that opens its own circuit, a deadline that
// leaves the fallback no time, a cancel or an unusable option after an escalation.
import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, startTestServer, useServer, waitFor, type RunningServer } from './harness.js';

/** A prompt whose first `ollama run` fails (exit 1, a model failure) and whose later ones answer. */
const failsOnce = (key: string) => `do the thing @fake:fail_times=1 @fake:key=${key}`;

async function taskStatus(server: RunningServer, taskId: string): Promise<Record<string, unknown>> {
  const result = await server.client.callTool({
    name: 'ollama_task_status',
    arguments: { task_id: taskId, response_format: 'detailed' },
  });
  return result.structuredContent as Record<string, unknown>;
}

describe('a fallback never makes a task escalate sooner', () => {
  const server = useServer({
    FAKE_OLLAMA_MODELS: 'good:1b,flaky:1b,other:1b,gpt-oss:20b-cloud',
    FAKE_OLLAMA_CLOUD: 'disabled',
    OLLAMA_MCP_BREAKER_THRESHOLD: '3',
    OLLAMA_MCP_BREAKER_COOLDOWN_MS: '600000',
  });

  it('a last fallback that is not installed: the retryable failure stands, and the task then succeeds on its own model', async () => {
    const call = { model: 'good:1b', fallback_models: ['missing:1b'], prompt: failsOnce('d2a'), task_id: 'd2-missing' };
    const first = await server.run(call);
    expect(first.metadata).toMatchObject({ escalate: false, escalation_reason: null, retryable: true, retry_count: 0 });
    expect(first.metadata.fallback.map((f) => [f.model, f.status])).toEqual([['good:1b', 'crashed']]);
    expect(first.text).not.toContain('ESCALATE');
    expect(first.next).toMatch(/^Retry with the same task_id/);

    const second = await server.run(call);
    expect(second.metadata).toMatchObject({ status: 'ok', model: 'good:1b', escalate: false });
    expect((await taskStatus(server, 'd2-missing')).escalated).toBe(false);
  });

  it('a last fallback the account may not use (cloud_access_denied) does not escalate a retryable failure', async () => {
    const call = { model: 'good:1b', fallback_models: ['gpt-oss:20b-cloud'], prompt: failsOnce('d2b'), task_id: 'd2-cloud' };
    const first = await server.run(call);
    expect(first.metadata.fallback.map((f) => [f.model, f.status])).toEqual([['good:1b', 'crashed']]);
    expect(first.metadata).toMatchObject({ status: 'cloud_access_denied', escalate: false, retryable: true, retry_count: 0 });
    expect(first.metadata.retries_left).toBe(3);
    const second = await server.run(call);
    expect(second.metadata).toMatchObject({ status: 'ok', model: 'good:1b', escalate: false });
  });

  it('a fallback whose failure opens its own circuit does not escalate the task', async () => {
    // flaky:1b fails twice for other tasks: its next failure opens its circuit (threshold 3).
    for (const key of ['d2c-1', 'd2c-2']) await server.run({ model: 'flaky:1b', prompt: failsOnce(key) });
    const call = { model: 'other:1b', fallback_models: ['flaky:1b'], task_id: 'd2-open' };
    const first = await server.run({ ...call, prompt: 'x @fake:exit=1' });
    expect(first.metadata.fallback.map((f) => [f.model, f.status])).toEqual([['other:1b', 'crashed']]);
    expect(first.metadata).toMatchObject({ model: 'flaky:1b', status: 'crashed', escalate: false, retryable: true });
    expect(first.metadata.circuit.state).toBe('open');
    expect(first.next).toContain('Do not use flaky:1b for');
    const line = readRuns(server.sandbox).find((l) => l.run_id === first.metadata.run_id)!;
    expect(line).toMatchObject({ escalate: false, will_retry: false, circuit: { transition: 'opened' } });

    const second = await server.run({ ...call, prompt: 'again' });
    expect(second.metadata).toMatchObject({ status: 'ok', model: 'other:1b', escalate: false, retry_count: 1 });
  });

  it('every model escalating on its own still escalates: two missing models', async () => {
    const r = await server.run({ model: 'missing-a:1b', fallback_models: ['missing-b:1b'], prompt: 'x', task_id: 'd2-none' });
    expect(r.metadata).toMatchObject({ status: 'model_not_found', escalate: true, escalation_reason: 'model_not_found' });
    expect(r.next).toContain('missing-b:1b is not installed');
  });
});

describe('a chain whose fallback cannot start before the deadline', () => {
  // One request of a model at a time, as Ollama runs by default: the fallback's slot is held.
  const server = useServer({
    FAKE_OLLAMA_MODELS: 'prim:1b,busy:1b',
    OLLAMA_NUM_PARALLEL: '1',
  });

  it('is one failed attempt of the task (the primary failure), and escalates after max_retries such calls', async () => {
    const blocker = server.run({ model: 'busy:1b', prompt: 'hold the slot @fake:sleep_ms=8000' }, { timeout: 30_000 });
    await waitFor(() => spawnCount(server.sandbox) >= 1, 10_000, 'the blocker to start');
    const call = (key: string) =>
      server.run({
        model: 'prim:1b',
        fallback_models: ['busy:1b'],
        prompt: `x @fake:exit=1 @fake:key=${key}`,
        task_id: 'd3',
        max_retries: 1,
        deadline_ms: 2_500,
      });
    const first = await call('d3-1');
    expect(first.metadata.fallback.map((f) => [f.model, f.status])).toEqual([['prim:1b', 'crashed']]);
    expect(first.metadata).toMatchObject({ status: 'not_started', escalate: false, retry_count: 0, retries_left: 1 });
    const second = await call('d3-2');
    expect(second.metadata).toMatchObject({
      status: 'not_started',
      escalate: true,
      escalation_reason: 'max_retries_exceeded',
      retry_count: 1,
    });
    expect(second.next).toContain('max_retries_exceeded: it failed 2 times, max_retries 1');
    expect(await taskStatus(server, 'd3')).toMatchObject({ failures: 2, escalated: true, last_status: 'crashed' });
    await blocker;
  });
});

describe('an escalation ends only with a success or ollama_reset', () => {
  const ENV = { FAKE_OLLAMA_MODELS: 'llama3.2:latest,qwen3:8b' };
  const escalate = async (server: RunningServer, taskId: string) => {
    const r = await server.run({ model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: taskId, max_retries: 0 });
    expect(r.metadata.escalate).toBe(false); // max_retries 0: never escalates for count
    const missing = await server.run({ model: 'gone:1b', prompt: 'x', task_id: taskId });
    expect(missing.metadata).toMatchObject({ escalate: true, escalation_reason: 'model_not_found' });
  };

  it('a cancel, a job never started and a refused option keep the task escalated (signal mode), a success ends it', async () => {
    const server = await startTestServer(ENV);
    await escalate(server, 'd7');
    const stillEscalated = async () =>
      expect(await taskStatus(server, 'd7')).toMatchObject({ escalated: true, escalation_reason: 'model_not_found' });

    // A cancel: the caller aborts a run that hangs.
    const controller = new AbortController();
    const cancelled = server
      .run({ model: 'llama3.2', prompt: 'x @fake:hang', task_id: 'd7' }, { signal: controller.signal })
      .catch(() => null);
    await waitFor(() => spawnCount(server.sandbox) >= 2, 10_000, 'the hanging run');
    controller.abort();
    await cancelled;
    await waitFor(
      () => readRuns(server.sandbox).some((l) => l.task_id === 'd7' && l.status === 'cancelled'),
      10_000,
      'the cancelled line',
    );
    await stillEscalated();

    // A batch job whose batch deadline passed before it started.
    await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        jobs: [
          { model: 'llama3.2', prompt: 'slow @fake:sleep_ms=3000', task_id: 'd7-other' },
          { model: 'llama3.2', prompt: 'never', task_id: 'd7' },
        ],
        concurrency: 1,
        deadline_ms: 1_500,
      },
    });
    expect(readRuns(server.sandbox).find((l) => l.task_id === 'd7' && l.status === 'not_started')).toBeDefined();
    await stillEscalated();

    // An option the model refuses (think on a model that cannot think): nothing the task did.
    const refused = await server.run({ model: 'llama3.2', prompt: 'x', task_id: 'd7', think: true });
    expect(refused.metadata).toMatchObject({
      status: 'unsupported_option',
      escalate: true,
      escalation_reason: 'model_not_found',
    });
    expect(refused.next).toMatch(/^Stop: do not retry this task; escalate it .*it escalated before \(model_not_found\)/);
    await stillEscalated();

    // A later failure that would not escalate by itself keeps it too; a success ends it.
    const failed = await server.run({ model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'd7' });
    expect(failed.metadata).toMatchObject({ status: 'crashed', escalate: true, escalation_reason: 'model_not_found' });
    await stillEscalated();
    const ok = await server.run({ model: 'llama3.2', prompt: 'x', task_id: 'd7' });
    expect(ok.metadata).toMatchObject({ status: 'ok', escalate: false });
    expect(await taskStatus(server, 'd7')).toMatchObject({ escalated: false, failures: 0 });
  });

  it('in block mode an attempt in flight that ends cancelled after the task escalated does not lift the block; ollama_reset does', async () => {
    const server = await startTestServer({ ...ENV, OLLAMA_MCP_ESCALATION: 'block' });
    // Two calls of one task at once: one hangs, the other escalates; then the first is cancelled.
    const controller = new AbortController();
    const hanging = server
      .run({ model: 'llama3.2', prompt: 'x @fake:hang', task_id: 'd7b' }, { signal: controller.signal })
      .catch(() => null);
    await waitFor(() => spawnCount(server.sandbox) >= 1, 10_000, 'the hanging run');
    const missing = await server.run({ model: 'gone:1b', prompt: 'x', task_id: 'd7b' });
    expect(missing.metadata).toMatchObject({ escalate: true, escalation_reason: 'model_not_found' });
    controller.abort();
    await hanging;
    await waitFor(
      () => readRuns(server.sandbox).some((l) => l.task_id === 'd7b' && l.status === 'cancelled'),
      10_000,
      'the cancelled line',
    );
    const spawnsBefore = spawnCount(server.sandbox);

    const blocked = await server.run({ model: 'llama3.2', prompt: 'x', task_id: 'd7b' });
    expect(blocked.metadata).toMatchObject({ status: 'blocked', escalate: true, escalation_reason: 'model_not_found' });
    expect(spawnCount(server.sandbox)).toBe(spawnsBefore);
    expect(await taskStatus(server, 'd7b')).toMatchObject({ escalated: true, blocked: true });

    await server.client.callTool({ name: 'ollama_reset', arguments: { task_id: 'd7b' } });
    const afterReset = await server.run({ model: 'llama3.2', prompt: 'x', task_id: 'd7b' });
    expect(afterReset.metadata).toMatchObject({ status: 'ok', escalate: false, retry_count: 0 });
  });
});
