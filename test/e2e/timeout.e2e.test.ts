import { describe, expect, it } from 'vitest';
import { isAlive, readRuns, readRunTrace, useServer } from './harness.js';

describe('hard timeout', () => {
  const server = useServer({ OLLAMA_MCP_KILL_GRACE_MS: '400' });

  it('stops a CLI whose answer never begins at start_timeout_ms, not at timeout_ms: SIGTERM, the child gone, the circuit untouched', async () => {
    const started = Date.now();
    const result = await server.run({
      model: 'llama3.2',
      prompt: 'never begins @fake:hang',
      timeout_ms: 300,
      // Time for the fake CLI to start on a loaded machine: its trace must show it was there.
      start_timeout_ms: 3_000,
      task_id: 'silent',
    });
    const elapsed = Date.now() - started;
    expect(result.metadata).toMatchObject({
      status: 'start_timeout',
      timed_out: false,
      ok: false,
      escalate: false,
      retryable: true,
      retry_count: 0,
      start_ms: null,
      start_timeout_ms: 3_000,
      circuit: { consecutive_failures: 0 },
    });
    expect(result.metadata.error?.message).toContain('did not begin to answer within 3000 ms');
    expect(elapsed).toBeGreaterThanOrEqual(3_000); // not at timeout_ms
    const events = readRunTrace(server.sandbox);
    const start = events.find((e) => e.event === 'start')!;
    expect(isAlive(start.pid)).toBe(false);
    expect(events.find((e) => e.event === 'exit' && e.pid === start.pid)).toMatchObject({ signal: 'SIGTERM' });
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ status: 'start_timeout', timed_out: false, start_timeout_ms: 3_000 });
  });

  it('times the answer from its first byte, and keeps what the model printed before the timeout', async () => {
    // The fake's spinner turns 2 s before the answer begins, then the answer streams over 2 s: a 1.2 s
    // timeout_ms is passed only because it counts from the first byte.
    const result = await server.run({ model: 'llama3.2', prompt: 'slow answer @fake:sleep_ms=4000', timeout_ms: 1_200 });
    expect(result.metadata).toMatchObject({ status: 'timeout', timed_out: true, timeout_ms: 1_200 });
    expect(result.metadata.start_ms).toBeGreaterThanOrEqual(1_900);
    expect(result.metadata.duration_ms).toBeGreaterThanOrEqual(result.metadata.start_ms! + 1_200);
    expect(result.output.length).toBeGreaterThan(0);
    expect('fake answer from llama3.2: slow answer').toContain(result.output);
  });

  it('escalates to SIGKILL after the grace when the process ignores SIGTERM', async () => {
    const before = readRunTrace(server.sandbox).filter((e) => e.event === 'start').length;
    const started = Date.now();
    // The fake ignores SIGTERM only once it has read its prompt: the limit leaves a loaded machine
    // time to get there, or the SIGTERM would kill it before it could ignore it.
    const result = await server.run({
      model: 'llama3.2',
      prompt: 'stubborn @fake:hang @fake:ignore_sigterm',
      start_timeout_ms: 1_500,
    });
    expect(result.metadata).toMatchObject({ status: 'start_timeout', signal: 'SIGKILL' });
    expect(Date.now() - started).toBeLessThan(1_500 + 400 + 2_000);
    const start = readRunTrace(server.sandbox).filter((e) => e.event === 'start')[before]!;
    expect(isAlive(start.pid)).toBe(false);
  });
});
