import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox, maxConcurrent, readRuns, readRunTrace, startTestServer, waitFor, type RunningServer } from './harness.js';

const SHARED = { OLLAMA_MCP_SHARED_CONCURRENCY: '2', OLLAMA_MCP_CONCURRENCY: '3' };

async function health(server: RunningServer) {
  const result = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { report: result.structuredContent as Record<string, any>, text };
}

describe.skipIf(!existsSync('/proc/self/stat'))('OLLAMA_MCP_SHARED_CONCURRENCY', () => {
  it('two server processes never run more than 2 model processes at once, and every run completes', async () => {
    const sandbox = makeSandbox();
    const [a, b] = await Promise.all([startTestServer(SHARED, sandbox), startTestServer(SHARED, sandbox)]);
    const calls = [a, b].flatMap((server, s) =>
      [0, 1, 2].map((i) => server.run({ model: 'llama3.2', prompt: `job ${s}-${i} @fake:sleep_ms=400` })),
    );
    const results = await Promise.all(calls);
    expect(results.map((r) => r.metadata.status)).toEqual(Array(6).fill('ok'));
    const trace = readRunTrace(sandbox);
    expect(trace.filter((e) => e.event === 'start')).toHaveLength(6);
    expect(maxConcurrent(trace)).toBe(2);
    // The waiting is in queue_ms: with 6 runs of ~400 ms and 2 slots, some waited at least one run.
    const queued = readRuns(sandbox).map((r) => r.queue_ms as number);
    expect(Math.max(...queued)).toBeGreaterThanOrEqual(300);
  });

  it("shows the slots in use across processes, with the holders' pids, in ollama_health", async () => {
    const sandbox = makeSandbox();
    const a = await startTestServer(SHARED, sandbox);
    const b = await startTestServer(SHARED, sandbox);
    const controller = new AbortController();
    const hanging = a.run({ model: 'llama3.2', prompt: 'hold @fake:hang' }, { signal: controller.signal }).catch(() => null);
    try {
      await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the run to start');
      const { report, text } = await health(b);
      expect(report.processes.shared_slots).toMatchObject({ limit: 2, in_use: 1, waiting_here: 0, error: null });
      expect(report.processes.shared_slots.slots).toEqual([
        expect.objectContaining({ slot: 0, pid: a.transport.pid, holder: 'alive' }),
      ]);
      expect(text).toContain(`1 of 2 slots in use across server processes (slot 0: pid ${a.transport.pid})`);
      expect(report.processes.orphan_sweep.enabled).toBe(true);
    } finally {
      controller.abort();
      await hanging;
    }
  });

  it('a slot held by a dead server is reclaimed, and stderr says so', async () => {
    const sandbox = makeSandbox();
    // Both slots held by a process that has exited (same host, boot and pid namespace as the server).
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    const holder = {
      pid: Number(dead.stdout.trim()),
      start: 1,
      host: os.hostname(),
      boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      pidns: readlinkSync('/proc/self/ns/pid'),
      at: Date.now() - 60_000,
    };
    const slots = path.join(sandbox.telemetryDir, 'slots');
    mkdirSync(slots, { recursive: true });
    for (const slot of ['0', '1']) symlinkSync(JSON.stringify(holder), path.join(slots, slot));

    const server = await startTestServer(SHARED, sandbox);
    const result = await server.run({ model: 'llama3.2', prompt: 'after a crash' }, { timeout: 20_000 });
    expect(result.metadata.status).toBe('ok');
    expect(server.stderr()).toContain(`shared concurrency slot 0 was held by server pid ${holder.pid}, which is gone: reclaimed`);
  });

  it('a call waiting for a shared slot can be cancelled; it is logged as cancelled, with its wait', async () => {
    const sandbox = makeSandbox();
    const env = { OLLAMA_MCP_SHARED_CONCURRENCY: '1' };
    const a = await startTestServer(env, sandbox);
    const b = await startTestServer(env, sandbox);
    const holdController = new AbortController();
    const holding = a.run({ model: 'llama3.2', prompt: 'hold @fake:hang' }, { signal: holdController.signal }).catch(() => null);
    try {
      await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the first run to start');
      const controller = new AbortController();
      const waiting = b
        .run({ model: 'llama3.2', prompt: 'waits', task_id: 'w' }, { signal: controller.signal })
        .catch((e: Error) => e);
      // It waits for the shared slot (health says so), holding nothing else.
      for (let i = 0; i < 100 && (await health(b)).report.processes.shared_slots.waiting_here !== 1; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((await health(b)).report.processes.shared_slots.waiting_here).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      controller.abort();
      await waiting;
      await waitFor(() => readRuns(sandbox).some((r) => r.task_id === 'w'), 10_000, 'the cancelled call to be logged');
      const line = readRuns(sandbox).find((r) => r.task_id === 'w')!;
      expect(line.status).toBe('cancelled');
      expect(line.queue_ms as number).toBeGreaterThanOrEqual(300);
      expect(readRunTrace(sandbox).filter((e) => e.event === 'start')).toHaveLength(1);
    } finally {
      holdController.abort();
      await holding;
    }
  });
});
