/**
 * Issue 8, "to keep true": SIGTERM with runs in flight kills every model process within 0.5 s,
 * logs each run (running or still queued) as `cancelled`, and exits 0.
 */
import { describe, expect, it } from 'vitest';
import { isAlive, makeSandbox, readRuns, readRunTrace, serverEnv, waitFor } from '../e2e/harness.js';
import { startRawServer, toolCall } from '../helpers/raw-stdio.js';

describe('SIGTERM with runs in flight', () => {
  it('kills the model processes within 0.5 s and logs every run as cancelled', async () => {
    const sandbox = makeSandbox();
    const server = startRawServer(serverEnv(sandbox, { OLLAMA_MCP_CONCURRENCY: '2' }));
    await server.initialize();
    for (let id = 1; id <= 3; id += 1) {
      server.send(toolCall(id, 'ollama_run', { model: 'llama3.2', prompt: `forever ${id} @fake:hang`, task_id: `term-${id}` }));
    }
    // Two run (the limit), the third waits in line.
    await waitFor(() => readRunTrace(sandbox).filter((e) => e.event === 'start').length === 2, 10_000, 'two runs to start');
    const pids = readRunTrace(sandbox)
      .filter((e) => e.event === 'start')
      .map((e) => e.pid);
    expect(pids.every(isAlive)).toBe(true);

    const signalled = performance.now();
    server.child.kill('SIGTERM');
    while (pids.some(isAlive) && performance.now() - signalled < 5_000) await new Promise((resolve) => setTimeout(resolve, 5));
    const goneAfterMs = performance.now() - signalled;
    expect(pids.some(isAlive)).toBe(false);
    expect(goneAfterMs).toBeLessThan(500);

    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain('SIGTERM: stopping');
    const runs = readRuns(sandbox);
    expect(runs.map((run) => [run.task_id, run.status]).sort()).toEqual([
      ['term-1', 'cancelled'],
      ['term-2', 'cancelled'],
      ['term-3', 'cancelled'],
    ]);
    expect(readRunTrace(sandbox).filter((e) => e.event === 'start')).toHaveLength(2); // the queued one never started
  });
});
