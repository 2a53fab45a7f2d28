// Busy backoff through the built server: Ollama's `503 ... server busy` is retried inside the call
// after a jittered backoff, each try logged, none counted against the task or the circuit; only
// when the retries are spent does the caller see server_busy.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, spawnCount, startTestServer } from './harness.js';

describe('busy backoff', () => {
  it('a server busy twice then free ends ok: retry_count 0, busy_retries 2, three lines', async () => {
    const sandbox = makeSandbox();
    const server = await startTestServer(
      { FAKE_OLLAMA_BUSY_TIMES: '2', FAKE_OLLAMA_COUNTER_FILE: path.join(sandbox.fakeStateDir, 'busy-count') },
      sandbox,
    );
    const r = await server.run({ model: 'llama3.2', prompt: 'hello', task_id: 'busy-1' });
    expect(r.metadata).toMatchObject({ status: 'ok', retry_count: 0, busy_retries: 2, escalate: false, chain_id: null });
    expect(r.metadata.circuit.consecutive_failures).toBe(0);
    expect(r.text).toContain('2 busy retries');
    const lines = readRuns(sandbox);
    expect(lines.map((l) => [l.status, l.busy_try, l.will_retry, l.retry_count])).toEqual([
      ['server_busy', 0, true, 0],
      ['server_busy', 1, true, 0],
      ['ok', 2, false, 0],
    ]);
    expect(spawnCount(sandbox)).toBe(3);
    // Not counted against the task: its next failure is its first.
    const next = await server.run({ model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'busy-1' });
    expect(next.metadata.retry_count).toBe(0);
  });

  it('when the retries are spent the caller sees server_busy, counted once for the task', async () => {
    const server = await startTestServer({ OLLAMA_MCP_BUSY_RETRIES: '2' });
    const { sandbox } = server;
    const call = { model: 'llama3.2', prompt: 'x @fake:error=busy', task_id: 'busy-2' };
    const r = await server.run(call);
    expect(r.metadata).toMatchObject({ status: 'server_busy', retryable: true, escalate: false, busy_retries: 2 });
    expect(readRuns(sandbox).map((l) => [l.busy_try, l.will_retry])).toEqual([
      [0, true],
      [1, true],
      [2, false],
    ]);
    const again = await server.run(call);
    expect(again.metadata.retry_count).toBe(1);
  });

  it('OLLAMA_MCP_BUSY_RETRIES=0 turns it off', async () => {
    const server = await startTestServer({ OLLAMA_MCP_BUSY_RETRIES: '0' });
    const { sandbox } = server;
    const r = await server.run({ model: 'llama3.2', prompt: 'x @fake:error=busy' });
    expect(r.metadata).toMatchObject({ status: 'server_busy', busy_retries: 0 });
    expect(readRuns(sandbox)).toHaveLength(1);
  });

  it('waits only within deadline_ms', async () => {
    const server = await startTestServer({ OLLAMA_MCP_BUSY_RETRIES: '10' });
    const { sandbox } = server;
    const deadlineMs = 2_500;
    const startedAt = Date.now();
    const r = await server.run({ model: 'llama3.2', prompt: 'x @fake:error=busy', deadline_ms: deadlineMs });
    const elapsed = Date.now() - startedAt;
    expect(r.metadata.status).toBe('server_busy');
    expect(r.metadata.busy_retries).toBeLessThan(10);
    expect(elapsed).toBeLessThan(deadlineMs + 2_000); // process start-ups on a busy machine
    expect(readRuns(sandbox)).toHaveLength(r.metadata.busy_retries + 1);
  });
});
