import { describe, expect, it } from 'vitest';
import { maxConcurrent, readRunTrace, startTestServer, useServer } from './harness.js';

describe('bounded concurrency', () => {
  const server = useServer({ OLLAMA_MCP_CONCURRENCY: '2' });

  it('never runs more than OLLAMA_MCP_CONCURRENCY model processes at once; the rest wait in line', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => server.run({ model: 'llama3.2', prompt: `job ${i} @fake:sleep_ms=400` }));
    const results = await Promise.all(calls);
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    const events = readRunTrace(server.sandbox);
    expect(events.filter((e) => e.event === 'start')).toHaveLength(6);
    expect(maxConcurrent(events)).toBe(2);
    const queued = results.map((r) => r.metadata.queue_ms).sort((a, b) => a - b);
    expect(queued[0]).toBeLessThan(100);
    expect(queued[5]).toBeGreaterThanOrEqual(600); // the last pair waited for two pairs of ~400 ms runs
  });

  it('serves waiting calls in the order they arrived', async () => {
    // One slot, so each process starts only after the previous one exited: the trace order is the service order.
    const one = await startTestServer({ OLLAMA_MCP_CONCURRENCY: '1' });
    const { sandbox: single } = one;
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => one.run({ model: 'llama3.2', prompt: `ordered ${i} @fake:sleep_ms=100` })),
    );
    const served = readRunTrace(single)
      .filter((e) => e.event === 'prompt')
      .map((e) => Number(/ordered (\d)/.exec(e.prompt ?? '')?.[1]));
    expect(served).toEqual([0, 1, 2, 3, 4]);
    expect(maxConcurrent(readRunTrace(single))).toBe(1);
  });
});
