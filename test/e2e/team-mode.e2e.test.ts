import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  noteRedisSkipped,
  OPENSSL_AVAILABLE,
  REDIS_SERVER_AVAILABLE,
  startRedisServer,
  type RedisServer,
} from '../helpers/redis-server.js';
import { makeSandbox, readRuns, startTestServer, type RunningServer, type Sandbox } from './harness.js';

noteRedisSkipped();

const PASSWORD = 'team-pass-7f3a9c';

/** Everything a server could leak the password through: its stderr, runs.jsonl, the results given. */
function leakSurface(sandbox: Sandbox, servers: readonly RunningServer[], results: readonly unknown[]): string {
  const files = readdirSync(sandbox.telemetryDir).map((name) => {
    const file = path.join(sandbox.telemetryDir, name);
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return ''; // a directory
    }
  });
  return [...files, ...servers.map((s) => s.stderr()), JSON.stringify(results)].join('\n');
}

describe.skipIf(!REDIS_SERVER_AVAILABLE)('team mode: servers on separate telemetry dirs sharing one Redis', () => {
  let redis: RedisServer;
  let db = 0;
  /** The env of a server on a fresh database of the shared (password-protected) Redis. */
  const teamEnv = (database: number, extra: Record<string, string> = {}) => ({
    OLLAMA_MCP_STATE_URL: `redis://:${PASSWORD}@127.0.0.1:${redis.port}/${database}`,
    ...extra,
  });

  beforeAll(async () => {
    redis = await startRedisServer(['--requirepass', PASSWORD]);
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  it('count one task exactly: 16 concurrent failing attempts through two servers get retry counts 0..15, each once', async () => {
    db += 1;
    const [dirA, dirB] = [makeSandbox(), makeSandbox()];
    const env = teamEnv(db, { OLLAMA_MCP_BREAKER_THRESHOLD: '1000', OLLAMA_MCP_CONCURRENCY: '8' });
    const [a, b] = await Promise.all([startTestServer(env, dirA), startTestServer(env, dirB)]);
    const call = (server: RunningServer) =>
      server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'team-task', max_retries: 0 });
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => call(i % 2 === 0 ? a : b)));
    const counts = results.map((r) => r.metadata.retry_count).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 16 }, (_, i) => i));
    for (const result of results) expect(result.metadata.warnings ?? []).toEqual([]);

    // Both servers read the same ledger.
    const status = await b.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'team-task', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ known: true, attempts: 16, failures: 16 });

    // runs.jsonl stays local: each dir holds only its own server's 8 attempts.
    const [runsA, runsB] = [readRuns(dirA), readRuns(dirB)];
    expect(runsA.filter((r) => r.tool === 'ollama_run')).toHaveLength(8);
    expect(runsB.filter((r) => r.tool === 'ollama_run')).toHaveLength(8);
    // No state files in team mode: the ledger is in Redis.
    expect(readdirSync(dirA.telemetryDir).filter((name) => name.startsWith('state'))).toEqual([]);

    const health = await a.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = health.structuredContent as {
      state_backend: unknown;
      ledger: { ok: boolean };
      config: Record<string, unknown>;
    };
    expect(report.state_backend).toEqual({
      kind: 'redis',
      location: `redis://:***@127.0.0.1:${redis.port}/${db}`,
      reachable: true,
      error: null,
    });
    expect(report.ledger.ok).toBe(true);
    expect(report.config.state_url).toBe(`redis://:***@127.0.0.1:${redis.port}/${db}`);
    const text = (health.content as { text: string }[]).map((c) => c.text).join('\n');
    expect(text).toContain(`state: shared in Redis at redis://:***@127.0.0.1:${redis.port}/${db} (team mode), reachable`);
    expect(leakSurface(dirA, [a, b], [results, health])).not.toContain(PASSWORD);
  });

  it('share the circuits: a circuit opened through one server refuses runs through the other, and a reset through it closes it for both', async () => {
    db += 1;
    const [dirA, dirB] = [makeSandbox(), makeSandbox()];
    const env = teamEnv(db, { OLLAMA_MCP_BREAKER_THRESHOLD: '2', OLLAMA_MCP_BREAKER_COOLDOWN_MS: '60000' });
    const [a, b] = await Promise.all([startTestServer(env, dirA), startTestServer(env, dirB)]);
    await a.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1' });
    const opening = await a.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1' });
    expect(opening.metadata.circuit.state).toBe('open');
    const refused = await b.run({ model: 'llama3.2', prompt: 'hello' });
    expect(refused.metadata).toMatchObject({ status: 'circuit_open', escalate: true, circuit: { state: 'open' } });
    expect(refused.metadata.circuit.retry_after_seconds).toBeGreaterThan(50);
    // Refused without spawning: B's log has the refusal, and no model ran in B's sandbox.
    expect(readRuns(dirB).find((r) => r.tool === 'ollama_run')).toMatchObject({ status: 'circuit_open' });

    await b.client.callTool({ name: 'ollama_reset', arguments: { model: 'llama3.2' } });
    const again = await a.run({ model: 'llama3.2', prompt: 'hello' });
    expect(again.metadata.status).toBe('ok');
  });

  it('share block mode: a task that escalated through one server is refused through the other until reset', async () => {
    db += 1;
    const env = teamEnv(db, { OLLAMA_MCP_ESCALATION: 'block', OLLAMA_MCP_BREAKER_THRESHOLD: '1000' });
    const [a, b] = await Promise.all([startTestServer(env, makeSandbox()), startTestServer(env, makeSandbox())]);
    const failing = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'blocked-task', max_retries: 1 };
    await a.run(failing);
    const escalated = await a.run(failing);
    expect(escalated.metadata).toMatchObject({ escalate: true, escalation_reason: 'max_retries_exceeded' });
    const refused = await b.run({ ...failing, prompt: 'hello' });
    expect(refused.metadata).toMatchObject({ status: 'blocked', escalate: true });
    await a.client.callTool({ name: 'ollama_reset', arguments: { task_id: 'blocked-task' } });
    const again = await b.run({ ...failing, prompt: 'hello' });
    expect(again.metadata).toMatchObject({ status: 'ok', retry_count: 0 });
  });

  it('a server whose Redis is unreachable at start-up still starts and runs, and ollama_health says why', async () => {
    const dir = makeSandbox();
    const deadPort = redis.port === 65_535 ? redis.port - 1 : redis.port + 1;
    const server = await startTestServer({ OLLAMA_MCP_STATE_URL: `redis://:${PASSWORD}@127.0.0.1:${deadPort}/0` }, dir);
    const result = await server.run({ model: 'llama3.2', prompt: 'hello', task_id: 'offline-task' });
    expect(result.metadata.status).toBe('ok');
    expect((result.metadata.warnings ?? []).map((w) => w.kind)).toContain('ledger_unreadable');
    const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = health.structuredContent as { ok: boolean; problems: string[]; state_backend: { reachable: boolean } };
    expect(report.ok).toBe(false);
    expect(report.state_backend.reachable).toBe(false);
    expect(report.problems.join('\n')).toMatch(
      /Check that the Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/0 \(OLLAMA_MCP_STATE_URL\) is up/,
    );
    expect(server.stderr()).toMatch(/cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1/);
    expect(leakSurface(dir, [server], [result, health])).not.toContain(PASSWORD);
  });
});

describe.skipIf(!REDIS_SERVER_AVAILABLE || !OPENSSL_AVAILABLE)('team mode over TLS (rediss://)', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer(['--requirepass', PASSWORD], { tls: true });
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  it('shares the ledger over TLS, and refuses a certificate it cannot verify', async () => {
    const url = `rediss://:${PASSWORD}@127.0.0.1:${redis.port}/0`;
    const trusted = { OLLAMA_MCP_STATE_URL: url, NODE_EXTRA_CA_CERTS: redis.caFile! };
    const [dirA, dirB] = [makeSandbox(), makeSandbox()];
    const [a, b] = await Promise.all([startTestServer(trusted, dirA), startTestServer(trusted, dirB)]);
    const untrusting = await startTestServer({ OLLAMA_MCP_STATE_URL: url });
    const failing = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'tls-task', max_retries: 0 };
    expect((await a.run(failing)).metadata.retry_count).toBe(0);
    const second = await b.run(failing);
    expect(second.metadata.retry_count).toBe(1);
    expect(second.metadata.warnings ?? []).toEqual([]);

    // Without the CA, the certificate is not trusted: no connection, runs go on uncounted.
    const unverified = await untrusting.run(failing);
    expect((unverified.metadata.warnings ?? []).map((w) => w.kind)).toContain('ledger_unreadable');
    expect(untrusting.stderr()).toMatch(/cannot connect to Redis at rediss:\/\/:\*\*\*@127\.0\.0\.1:\d+\/0 \(.*certificate/);
  });
});
