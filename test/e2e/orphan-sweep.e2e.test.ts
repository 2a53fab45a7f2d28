import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox, readRunTrace, serverEnv, startServer, startTestServer, waitFor, type Sandbox } from './harness.js';
import { isRunning } from '../helpers/proc-state.js';
// A server on raw pipes, so the test can SIGKILL it.
import { startRawServer, toolCall } from '../helpers/raw-stdio.js';

const HANGING_RUN = toolCall(2, 'ollama_run', { model: 'llama3.2', prompt: 'forever @fake:hang' });

function childRecords(sandbox: Sandbox): string[] {
  const dir = path.join(sandbox.telemetryDir, 'children');
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.json')) : [];
}

function runStarts(sandbox: Sandbox): number[] {
  return readRunTrace(sandbox)
    .filter((e) => e.event === 'start')
    .map((e) => e.pid);
}

describe.skipIf(!existsSync('/proc/self/stat'))('orphan sweep', () => {
  it("a SIGKILLed server's model process is ended by the next server; a live server's run is untouched", async () => {
    const sandbox = makeSandbox();
    // 1. A server whose model process hangs, and would outlive it (see FAKE_OLLAMA_OUTLIVE_SERVER).
    const doomed = startRawServer(serverEnv(sandbox, { FAKE_OLLAMA_OUTLIVE_SERVER: '1' }));
    await doomed.initialize();
    doomed.send(HANGING_RUN);
    await waitFor(() => runStarts(sandbox).length === 1, 15_000, 'the doomed server to start its model process');
    const orphan = runStarts(sandbox)[0]!;

    // 2. A live server, with a run in progress. It dispatches alone: sharing the doomed server's queue, it
    // would see it die and end its child itself (test/e2e/shared-queue.e2e.test.ts), before the next server starts.
    const live = await startServer(sandbox, { OLLAMA_MCP_SHARED_QUEUE: '0' });
    const liveRun = live.run({ model: 'llama3.2', prompt: 'slow @fake:sleep_ms=6000' });
    await waitFor(() => runStarts(sandbox).length === 2, 15_000, "the live server's model process to start");
    const liveChild = runStarts(sandbox)[1]!;
    await waitFor(() => childRecords(sandbox).length === 2, 10_000, 'both model processes to be recorded');

    // 3. The first server is killed without a chance to end its child: the child keeps running.
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isRunning(orphan)).toBe(true);

    // 4. The next server to start ends it, and says so; the live server's child runs on.
    const next = await startServer(sandbox);
    try {
      await waitFor(() => !isRunning(orphan), 15_000, 'the orphan to be ended');
      await waitFor(() => next.stderr().includes(`ending orphaned model process ${orphan}`), 5_000, 'the sweep to say so');
      expect(next.stderr()).toContain('is gone');
      expect(isRunning(liveChild)).toBe(true);
      const exit = readRunTrace(sandbox).find((e) => e.pid === orphan && e.event === 'exit');
      expect(exit?.signal).toBe('SIGTERM');

      const result = await liveRun;
      expect(result.metadata.status).toBe('ok');
      expect(result.output).toContain('slow');
    } finally {
      await next.close();
      await live.close();
    }
    // Every record is gone: the orphan's (removed by the sweep) and the live run's (removed after its exit).
    await waitFor(() => childRecords(sandbox).length === 0, 5_000, 'the records to be removed');
  });

  it('a model process is recorded while it runs, and its record removed once it exits', async () => {
    const server = await startTestServer();
    const { sandbox } = server;
    const run = server.run({ model: 'llama3.2', prompt: 'hello @fake:sleep_ms=2000' });
    await waitFor(() => childRecords(sandbox).length === 1, 10_000, 'the model process to be recorded');
    await waitFor(() => runStarts(sandbox).length === 1, 10_000, 'the model process to start');
    const record = JSON.parse(
      readFileSync(path.join(sandbox.telemetryDir, 'children', childRecords(sandbox)[0]!), 'utf8'),
    ) as Record<string, unknown>;
    expect(record).toMatchObject({ pid: runStarts(sandbox)[0], args: ['run', 'llama3.2', '--nowordwrap', '--verbose'] });
    expect(record).not.toHaveProperty('prompt');
    expect((await run).metadata.status).toBe('ok');
    await waitFor(() => childRecords(sandbox).length === 0, 5_000, 'the record to be removed');
  });

  it('a server stopped by SIGTERM ends its model process group and leaves no record behind', async () => {
    const sandbox = makeSandbox();
    const server = startRawServer(serverEnv(sandbox));
    await server.initialize();
    server.send(HANGING_RUN);
    await waitFor(() => childRecords(sandbox).length === 1, 15_000, 'the model process to be recorded');
    const pid = runStarts(sandbox)[0]!;
    server.child.kill('SIGTERM');
    await server.exited;
    expect(isRunning(pid)).toBe(false);
    expect(childRecords(sandbox)).toEqual([]);
  });
});
