import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, makeSandbox, readRuns, readRunTrace, startServer, type RunningServer, type Sandbox } from './harness.js';

describe('hard timeout', () => {
  let sandbox: Sandbox;
  let server: RunningServer;
  beforeAll(async () => {
    sandbox = makeSandbox();
    server = await startServer(sandbox, { OLLAMA_MCP_KILL_GRACE_MS: '400' });
  });
  afterAll(async () => server?.close());

  it('kills a hanging model with SIGTERM, returns promptly with the partial output, and the child is gone', async () => {
    const started = Date.now();
    const result = await server.run({ model: 'llama3.2', prompt: 'write forever @fake:hang', timeout_ms: 800, task_id: 'slow' });
    const elapsed = Date.now() - started;
    expect(result.metadata).toMatchObject({ status: 'timeout', timed_out: true, ok: false, escalate: false, retry_count: 0 });
    expect(result.metadata.error?.message).toContain('800 ms');
    expect(elapsed).toBeLessThan(800 + 400 + 2_000);

    const events = readRunTrace(sandbox);
    const start = events.find((e) => e.event === 'start')!;
    expect(isAlive(start.pid)).toBe(false);
    expect(events.find((e) => e.event === 'exit' && e.pid === start.pid)).toMatchObject({ signal: 'SIGTERM' });
    expect(readRuns(sandbox).at(-1)).toMatchObject({ status: 'timeout', timed_out: true, timeout_ms: 800 });
  });

  it('keeps what the model printed before the timeout', async () => {
    const result = await server.run({ model: 'llama3.2', prompt: 'slow answer @fake:sleep_ms=4000', timeout_ms: 3200 });
    expect(result.metadata.status).toBe('timeout');
    expect(result.output.length).toBeGreaterThan(0);
    expect('fake answer from llama3.2: slow answer').toContain(result.output);
  });

  it('escalates to SIGKILL after the grace when the process ignores SIGTERM', async () => {
    const before = readRunTrace(sandbox).filter((e) => e.event === 'start').length;
    const started = Date.now();
    // The fake ignores SIGTERM only once it has read its prompt: the timeout leaves a loaded machine
    // time to get there, or the SIGTERM would kill it before it could ignore it.
    const result = await server.run({ model: 'llama3.2', prompt: 'stubborn @fake:hang @fake:ignore_sigterm', timeout_ms: 1_500 });
    expect(result.metadata).toMatchObject({ status: 'timeout', timed_out: true, signal: 'SIGKILL' });
    expect(Date.now() - started).toBeLessThan(1_500 + 400 + 2_000);
    const start = readRunTrace(sandbox).filter((e) => e.event === 'start')[before]!;
    expect(isAlive(start.pid)).toBe(false);
  });
});
