import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, maxConcurrent, readTrace, startServer, type RunningServer, type Sandbox } from './harness.js';

describe('bounded concurrency', () => {
  let sandbox: Sandbox;
  let server: RunningServer;
  beforeAll(async () => {
    sandbox = makeSandbox();
    server = await startServer(sandbox, { OLLAMA_MCP_CONCURRENCY: '2' });
  });
  afterAll(async () => server?.close());

  it('never runs more than OLLAMA_MCP_CONCURRENCY model processes at once; the rest wait in line', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => server.run({ model: 'llama3.2', prompt: `job ${i} @fake:sleep_ms=400` }));
    const results = await Promise.all(calls);
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    const events = readTrace(sandbox);
    expect(events.filter((e) => e.event === 'start')).toHaveLength(6);
    expect(maxConcurrent(events)).toBe(2);
    const queued = results.map((r) => r.metadata.queue_ms).sort((a, b) => a - b);
    expect(queued[0]).toBeLessThan(100);
    expect(queued[5]).toBeGreaterThanOrEqual(600); // the last pair waited for two pairs of ~400 ms runs
  });

  it('serves waiting calls in the order they arrived', async () => {
    const order: number[] = [];
    const calls = Array.from({ length: 5 }, (_, i) =>
      server.run({ model: 'llama3.2', prompt: `ordered ${i} @fake:sleep_ms=200` }).then((r) => {
        order.push(i);
        return r;
      }),
    );
    await Promise.all(calls);
    const starts = readTrace(sandbox)
      .filter((e) => e.event === 'prompt' && /ordered \d/.test(e.prompt ?? ''))
      .map((e) => Number(/ordered (\d)/.exec(e.prompt!)![1]));
    // The first two start together; after that, each freed slot goes to the next in line.
    expect(starts.slice(2)).toEqual([2, 3, 4]);
  });
});
