import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { startTestServer, type CallResult, type RunningServer } from '../e2e/harness.js';

noteRedisSkipped();

const kinds = (result: CallResult) => (result.metadata.warnings ?? []).map((warning) => warning.kind);
const LEDGER_WARNINGS = ['ledger_not_updated', 'ledger_unreadable'];

/** Run until a result carries no ledger warning (the server reconnected by itself), bounded. */
async function runUntilRecorded(server: RunningServer, args: Record<string, unknown>, timeoutMs: number): Promise<CallResult> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await server.run(args);
    if (!kinds(result).some((kind) => LEDGER_WARNINGS.includes(kind))) return result;
    if (Date.now() > deadline)
      throw new Error(`still not recorded after ${timeoutMs} ms: ${JSON.stringify(result.metadata.warnings)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.skipIf(!REDIS_SERVER_AVAILABLE)('team mode: Redis stopped mid-run and restarted', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  it('runs go on with the ledger warning, stderr says it once, and recording resumes when Redis is back', async () => {
    const server = await startTestServer({ OLLAMA_MCP_STATE_URL: redis.url(0), OLLAMA_MCP_BREAKER_THRESHOLD: '1000' });
    const failing = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'outage-task', max_retries: 0 };
    const first = await server.run(failing);
    expect(first.metadata.retry_count).toBe(0);
    expect(kinds(first)).toEqual([]);

    // Stopped while a run is in flight: the run ends normally, only its ledger update fails.
    const inFlight = server.run({ ...failing, prompt: 'broken @fake:sleep_ms=800 @fake:exit=1' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis.stop();
    const during = [await inFlight];
    for (let i = 0; i < 5; i += 1) during.push(await server.run(failing));
    for (const result of during) {
      expect(result.metadata.status).toBe('crashed');
      expect(kinds(result).some((kind) => LEDGER_WARNINGS.includes(kind))).toBe(true);
      expect(result.metadata.retry_count).toBeLessThanOrEqual(1);
    }
    const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    expect(health.structuredContent).toMatchObject({ ok: false, state_backend: { kind: 'redis', reachable: false } });

    // One line for the outage, and the runs' ledger warnings collapsed: not one line per run.
    const stderr = server.stderr();
    expect(stderr.match(/lost the connection to Redis/g)).toHaveLength(1);
    expect(
      (stderr.match(/ledger not updated for run|circuit of \S+ not updated at admission/g) ?? []).length,
    ).toBeLessThanOrEqual(2);

    await redis.start(); // empty: the test server keeps nothing on disk
    const recorded = await runUntilRecorded(server, { ...failing, task_id: 'after-outage' }, 15_000);
    expect(recorded.metadata.retry_count).toBe(0);
    const next = await server.run({ ...failing, task_id: 'after-outage' });
    expect(next.metadata.retry_count).toBe(1);
    expect(kinds(next)).toEqual([]);
    expect(server.stderr()).toMatch(/connected to Redis at redis:\/\/127\.0\.0\.1:\d+\/0 again/);
    const healthy = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    expect(healthy.structuredContent).toMatchObject({ state_backend: { reachable: true }, ledger: { ok: true } });
  });
});
