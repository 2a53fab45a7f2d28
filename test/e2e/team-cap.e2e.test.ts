import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import {
  makeSandbox,
  maxConcurrent,
  readRuns,
  readRunTrace,
  startTestServer,
  waitFor,
  type RunningServer,
  type Sandbox,
} from './harness.js';

noteRedisSkipped();

async function health(server: RunningServer) {
  const result = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { report: result.structuredContent as Record<string, any>, text };
}

/** Two servers' sandboxes with separate telemetry dirs (their file slots could not see each other), one trace of the fake's processes. */
function twoMachines(): [Sandbox, Sandbox] {
  const a = makeSandbox();
  return [a, { ...makeSandbox(), traceDir: a.traceDir }];
}

describe.skipIf(!REDIS_SERVER_AVAILABLE)('team mode: OLLAMA_MCP_SHARED_CONCURRENCY holds across servers on one Redis', () => {
  let redis: RedisServer;
  let db = 0;
  const env = () => ({
    OLLAMA_MCP_STATE_URL: redis.url(db),
    OLLAMA_MCP_SHARED_CONCURRENCY: '2',
    OLLAMA_MCP_CONCURRENCY: '3',
  });

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  it('two servers with separate telemetry dirs never run more than 2 model processes at once, and every run completes', async () => {
    db += 1;
    const [dirA, dirB] = twoMachines();
    const [a, b] = await Promise.all([startTestServer(env(), dirA), startTestServer(env(), dirB)]);
    const calls = [a, b].flatMap((server, s) =>
      [0, 1, 2].map((i) => server.run({ model: 'llama3.2', prompt: `job ${s}-${i} @fake:sleep_ms=400` })),
    );
    const results = await Promise.all(calls);
    expect(results.map((r) => r.metadata.status)).toEqual(Array(6).fill('ok'));
    const trace = readRunTrace(dirA);
    expect(trace.filter((e) => e.event === 'start')).toHaveLength(6);
    expect(maxConcurrent(trace)).toBe(2);
    const queued = [...readRuns(dirA), ...readRuns(dirB)].map((r) => r.queue_ms as number);
    expect(Math.max(...queued)).toBeGreaterThanOrEqual(300);
    // No slot files: the slots are in Redis.
    expect(existsSync(path.join(dirA.telemetryDir, 'slots'))).toBe(false);
  });

  it('ollama_health shows the holders of every server on the Redis, with host and pid', async () => {
    db += 1;
    const [dirA, dirB] = twoMachines();
    const a = await startTestServer(env(), dirA);
    const b = await startTestServer(env(), dirB);
    const controller = new AbortController();
    const hanging = a.run({ model: 'llama3.2', prompt: 'hold @fake:hang' }, { signal: controller.signal }).catch(() => null);
    try {
      await waitFor(() => readRunTrace(dirA).some((e) => e.event === 'start'), 10_000, 'the run to start');
      const { report, text } = await health(b);
      expect(report.processes.shared_slots).toMatchObject({
        limit: 2,
        in_use: 1,
        across: 'machines',
        waiting_here: 0,
        error: null,
      });
      expect(report.processes.shared_slots.slots).toEqual([
        expect.objectContaining({ slot: 0, pid: a.transport.pid, host: os.hostname() }),
      ]);
      expect(text).toContain(
        `1 of 2 slots in use across the servers on every machine (in Redis, team mode) (slot 0: pid ${a.transport.pid} on ${os.hostname()})`,
      );
      const own = await health(a);
      expect(own.report.processes.shared_slots.slots).toEqual([expect.objectContaining({ holder: 'this_server' })]);

      // A server that shuts down frees its slot at once (not when its 15 s lease runs out).
      controller.abort();
      await hanging;
      await a.close();
      expect((await health(b)).report.processes.shared_slots).toMatchObject({ in_use: 0, slots: [] });
    } finally {
      controller.abort();
      await hanging;
    }
  });
});
