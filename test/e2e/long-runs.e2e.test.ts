import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { StateStore } from '../../src/store/state/state-store.js';
import { isAlive, readRuns, readRunTrace, startTestServer, useServer, waitFor } from './harness.js';

describe('progress heartbeats', () => {
  const server = useServer({ OLLAMA_MCP_PROGRESS_INTERVAL_MS: '300' });

  it('a client that resets its timeout on progress completes a run lasting several of its timeouts', async () => {
    const notes: { progress: number; message?: string }[] = [];
    const result = await server.client.callTool(
      { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'long job @fake:sleep_ms=5000' } },
      undefined,
      { timeout: 1500, resetTimeoutOnProgress: true, onprogress: (p) => notes.push(p) },
    );
    expect(result.isError).toBe(false);
    expect(notes.length).toBeGreaterThanOrEqual(8);
    for (let i = 1; i < notes.length; i += 1) expect(notes[i]!.progress).toBeGreaterThan(notes[i - 1]!.progress);
    expect(notes.some((n) => /llama3\.2: running for \d+ s/.test(n.message ?? ''))).toBe(true);
  });

  it('without resetTimeoutOnProgress the same client times out (the heartbeat is what saves it)', async () => {
    await expect(
      server.client.callTool(
        { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'long job @fake:sleep_ms=3000' } },
        undefined,
        {
          timeout: 1000,
          onprogress: () => {},
        },
      ),
    ).rejects.toThrow(/timed out/i);
  });

  it.each([
    [
      'the server runs its limit of calls',
      { OLLAMA_MCP_CONCURRENCY: '1' },
      'queued: this server runs as many calls as it may at once (OLLAMA_MCP_CONCURRENCY), 0 calls ahead',
    ],
    [
      'Ollama runs one request of the model at a time',
      { OLLAMA_NUM_PARALLEL: '1' },
      'llama3.2: queued behind 1 call for llama3.2 (Ollama runs 1 of them at once)',
    ],
  ])('says why a queued call waits: %s', async (_why, env, expected) => {
    const busy = await startTestServer({ OLLAMA_MCP_PROGRESS_INTERVAL_MS: '200', ...env });
    const first = busy.run({ model: 'llama3.2', prompt: 'hold the slot @fake:sleep_ms=1500' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const messages: string[] = [];
    await busy.client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'wait' } }, undefined, {
      onprogress: (p) => messages.push(p.message ?? ''),
    });
    await first;
    expect(messages.some((m) => m.includes(expected))).toBe(true);
  });

  it('sends nothing when the client did not ask for progress', async () => {
    const seen: unknown[] = [];
    server.client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).ProgressNotificationSchema, (n) => {
      seen.push(n);
    });
    await server.run({ model: 'llama3.2', prompt: 'quiet @fake:sleep_ms=1000' });
    expect(seen).toEqual([]);
  });
});

describe('cancellation', () => {
  it('a client cancel kills the model at once, frees the slot, is logged as cancelled and changes neither ledger nor circuit', async () => {
    const server = await startTestServer({ OLLAMA_MCP_CONCURRENCY: '1', OLLAMA_MCP_BREAKER_THRESHOLD: '1' });
    const { sandbox } = server;
    const controller = new AbortController();
    const call = server.run(
      { model: 'llama3.2', prompt: 'forever @fake:hang', task_id: 'cancel-me' },
      { signal: controller.signal },
    );
    await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the model process to start');
    const pid = readRunTrace(sandbox).find((e) => e.event === 'start')!.pid;
    controller.abort();
    await expect(call).rejects.toThrow();
    const cancelledAt = Date.now();
    await waitFor(() => !isAlive(pid), 1_000, 'the model process to die');
    expect(Date.now() - cancelledAt).toBeLessThan(1_000);
    await waitFor(() => readRuns(sandbox).length === 1, 5_000, 'the cancelled run to be logged');
    expect(readRuns(sandbox)[0]).toMatchObject({ status: 'cancelled', task_id: 'cancel-me', escalate: false });

    // The slot is free (concurrency 1) and neither the circuit (threshold 1) nor the task counted it.
    const next = await server.run({ model: 'llama3.2', prompt: 'after the cancel', task_id: 'cancel-me' });
    expect(next.metadata).toMatchObject({ status: 'ok', retry_count: 0, queue_ms: expect.any(Number) });
    expect(next.metadata.queue_ms).toBeLessThan(500);
    const state = await new StateStore(path.join(sandbox.telemetryDir, 'state.json')).snapshot(['cancel-me']);
    expect(state.tasks['cancel-me']).toMatchObject({ failures: 0, totalFailures: 0 });
    expect(state.breakers['llama3.2:latest']).toEqual({ state: 'closed', consecutiveFailures: 0 });
  });
});

describe('OLLAMA_MCP_ESCALATION=block', () => {
  it('refuses, without spawning, further runs of a task that escalated', async () => {
    const server = await startTestServer({ OLLAMA_MCP_ESCALATION: 'block', OLLAMA_MCP_BREAKER_THRESHOLD: '100' });
    const fail = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'doomed', max_retries: 1 };
    await server.run(fail);
    expect((await server.run(fail)).metadata).toMatchObject({ escalate: true, escalation_reason: 'max_retries_exceeded' });
    const spawns = readRunTrace(server.sandbox).filter((e) => e.event === 'start').length;
    const blocked = await server.run({ ...fail, prompt: 'maybe now?' });
    expect(blocked.metadata).toMatchObject({
      status: 'blocked',
      escalate: true,
      escalation_reason: 'max_retries_exceeded',
      duration_ms: 0,
    });
    expect(blocked.metadata.error?.message).toContain('ollama_reset');
    expect(readRunTrace(server.sandbox).filter((e) => e.event === 'start').length).toBe(spawns);
    // Other tasks are not affected.
    expect((await server.run({ model: 'llama3.2', prompt: 'fine', task_id: 'other' })).metadata.status).toBe('ok');
  });
});
