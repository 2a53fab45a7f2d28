import { describe, expect, it } from 'vitest';
import { StateStore } from '../../src/store/state/state-store.js';
import path from 'node:path';
import { makeSandbox, readRuns, startTestServer } from './harness.js';

describe('several server processes on one telemetry dir', () => {
  it('two servers hammering one task end at the exact count, each attempt with its own retry_count', async () => {
    const sandbox = makeSandbox();
    const env = { OLLAMA_MCP_BREAKER_THRESHOLD: '1000', OLLAMA_MCP_CONCURRENCY: '4' };
    const [a, b] = await Promise.all([startTestServer(env, sandbox), startTestServer(env, sandbox)]);
    const perServer = 15;
    const call = (server: typeof a) =>
      server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'shared', max_retries: 0 });
    const results = await Promise.all([
      ...Array.from({ length: perServer }, () => call(a)),
      ...Array.from({ length: perServer }, () => call(b)),
    ]);
    // Every failed attempt got a distinct retry_count: 0, 1, ..., 29. None was lost or counted twice.
    const counts = results.map((r) => r.metadata.retry_count).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 2 * perServer }, (_, i) => i));

    const state = await new StateStore(path.join(sandbox.telemetryDir, 'state.json')).snapshot(['shared']);
    expect(state.tasks.shared).toMatchObject({ attempts: 2 * perServer, failures: 2 * perServer });

    // One whole line per attempt, from both processes.
    const runs = readRuns(sandbox);
    expect(runs).toHaveLength(2 * perServer);
    expect(new Set(runs.map((r) => r.server_pid)).size).toBe(2);
  });

  it('a circuit opened by one server refuses runs in the other', async () => {
    const sandbox = makeSandbox();
    const env = { OLLAMA_MCP_BREAKER_THRESHOLD: '2', OLLAMA_MCP_BREAKER_COOLDOWN_MS: '60000' };
    const [a, b] = await Promise.all([startTestServer(env, sandbox), startTestServer(env, sandbox)]);
    await a.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1' });
    await a.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1' });
    const refused = await b.run({ model: 'llama3.2', prompt: 'hello' });
    expect(refused.metadata).toMatchObject({ status: 'circuit_open', escalate: true, circuit: { state: 'open' } });
    expect(refused.metadata.circuit.retry_after_seconds).toBeGreaterThan(50);
  });
});
