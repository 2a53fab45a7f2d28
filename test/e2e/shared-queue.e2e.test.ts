// Several built servers in front of ONE fake shared `ollama serve` (test/fixtures/fake-ollama.md, "Shared
// server mode": one model fits, loads take their time, a killed client aborts its request), as every agent
// session starts its own server. They dispatch from one queue (docs/scheduling.md, "Several servers, one
// queue"): the same work costs the loads it costs through one server, a killed server holds no one, and a
// call for another model is served within the fairness bound whichever server sent it.
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeServe, type FakeServe } from '../helpers/fake-serve.js';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer } from '../helpers/redis-server.js';
import { makeSandbox, startServer, type RunningServer, type Sandbox } from './harness.js';

noteRedisSkipped();

const MODELS = 'sim-a:latest,sim-b:latest,sim-c:latest';

interface World {
  readonly sandbox: Sandbox;
  readonly serve: FakeServe;
  readonly servers: RunningServer[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** One fake Ollama (loads of `loadMs`) and `count` servers on one data dir, told nothing of Ollama's settings. */
async function world(count: number, serverEnv: Record<string, string> = {}, loadMs = 600): Promise<World> {
  const sandbox = makeSandbox();
  const serve = await startFakeServe({
    env: { FAKE_OLLAMA_MODELS: MODELS, FAKE_OLLAMA_LOAD_MS: String(loadMs) },
    traceDir: sandbox.traceDir,
  });
  cleanups.push(() => serve.stop());
  const env = { ...serve.env, FAKE_OLLAMA_MODELS: MODELS, OLLAMA_NUM_PARALLEL: '', OLLAMA_MAX_LOADED_MODELS: '', ...serverEnv };
  const servers: RunningServer[] = [];
  for (let i = 0; i < count; i += 1) {
    const server = await startServer(sandbox, env);
    servers.push(server);
    cleanups.push(() => server.close().catch(() => {}));
  }
  return { sandbox, serve, servers };
}

/**
 * The sessions: each its own model, `bursts` bursts of `calls` parallel calls, a burst starting
 * when the session's previous one answered; all sessions at once, session `s` through server `s % n`.
 */
async function sessions(w: World, count: number, bursts = 2, calls = 3): Promise<string[]> {
  const statuses: string[] = [];
  const models = ['sim-a', 'sim-b', 'sim-c'];
  await Promise.all(
    Array.from({ length: count }, async (_, s) => {
      const server = w.servers[s % w.servers.length]!;
      for (let b = 0; b < bursts; b += 1) {
        const results = await Promise.all(
          Array.from({ length: calls }, (_, c) =>
            server.run({ model: models[s]!, prompt: `s${s} b${b} c${c} @fake:sleep_ms=100` }, { timeout: 120_000 }),
          ),
        );
        statuses.push(...results.map((r) => r.metadata.status));
      }
    }),
  );
  return statuses;
}

/** Loads the same sessions cost through `servers` servers (env added), on a fresh Ollama. */
async function loadsOf(sessionCount: number, servers: number, env: Record<string, string> = {}): Promise<number> {
  const w = await world(servers, env);
  const statuses = await sessions(w, sessionCount);
  expect(statuses.every((s) => s === 'ok')).toBe(true);
  return w.serve.loads();
}

const pidOf = (server: RunningServer) => server.transport.pid!;

describe('several servers in front of one Ollama dispatch from one queue', () => {
  it('two sessions with their own servers cost at most one load more than through one server (per-process dispatch: a load per burst)', async () => {
    const one = await loadsOf(2, 1);
    const two = await loadsOf(2, 2);
    const alone = await loadsOf(2, 2, { OLLAMA_MCP_SHARED_QUEUE: '0' });
    expect(two).toBeLessThanOrEqual(one + 1);
    expect(alone).toBeGreaterThan(one + 1); // what the shared queue prevents: the test can tell
  });

  it('three sessions with three servers: at most one load more than through one server', async () => {
    const one = await loadsOf(3, 1);
    const three = await loadsOf(3, 3);
    expect(three).toBeLessThanOrEqual(one + 1);
  });

  it('a server SIGKILLed while its call runs holds the others no longer than its death is seen: its model process is ended, the waiting call runs, nothing is lost', async () => {
    const w = await world(2, { OLLAMA_MCP_PROGRESS_INTERVAL_MS: '200' });
    const [a, b] = w.servers as [RunningServer, RunningServer];
    const held = a.run({ model: 'sim-a', prompt: 'long @fake:sleep_ms=60000' }, { timeout: 120_000 }).catch(() => null);
    await waitFor(() => w.serve.events().some((e) => e.event === 'request_start' && e.model === 'sim-a:latest'));
    const messages: string[] = [];
    const waiting = b.client.callTool(
      { name: 'ollama_run', arguments: { model: 'sim-b', prompt: 'mine @fake:sleep_ms=100', response_format: 'detailed' } },
      undefined,
      { onprogress: (p) => messages.push(p.message ?? ''), timeout: 120_000 },
    );
    await waitFor(() => messages.some((m) => /queued behind 1 call of sim-a(:latest)? from another session/.test(m)));
    const health = await b.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const shared = (health.structuredContent as { runs: { shared_queue: Record<string, unknown> } }).runs.shared_queue;
    expect(shared).toMatchObject({ other_servers: 1, running_elsewhere: 1, waiting_elsewhere: 0, error: null });

    process.kill(pidOf(a), 'SIGKILL');
    const result = (await waiting).structuredContent as { metadata: { status: string; queue_ms: number; start_ms: number } };
    await held;
    expect(result.metadata.status).toBe('ok');
    // A's call had 60 s to go, A's lease 10 s: B waited for A's death to be seen (about 1 s) and its model
    // process to end, then sim-b's load.
    expect(result.metadata.queue_ms + result.metadata.start_ms).toBeLessThan(8_000);
    expect(w.serve.events().some((e) => e.event === 'load_done' && e.model === 'sim-b:latest')).toBe(true);
  });

  it("a server SIGKILLed while its calls wait leaves no ghost in the queue: the other server's calls go on, and the dead calls never run", async () => {
    const w = await world(2, { OLLAMA_MCP_SWITCH_AFTER_MS: '500' }, 300);
    const [a, b] = w.servers as [RunningServer, RunningServer];
    const first = b.run({ model: 'sim-b', prompt: 'b1 @fake:sleep_ms=3000' }, { timeout: 120_000 });
    await waitFor(() => w.serve.events().some((e) => e.event === 'request_start' && e.model === 'sim-b:latest'));
    // A's two calls for sim-a wait behind B's running one and soon are overdue: B's next call would give way to them.
    const ghosts = [0, 1].map((i) =>
      a.run({ model: 'sim-a', prompt: `a${i} @fake:sleep_ms=100` }, { timeout: 120_000 }).catch(() => null),
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    const second = b.run({ model: 'sim-b', prompt: 'b2 @fake:sleep_ms=100' }, { timeout: 120_000 });
    process.kill(pidOf(a), 'SIGKILL');
    await Promise.all(ghosts);
    const [r1, r2] = await Promise.all([first, second]);
    expect([r1.metadata.status, r2.metadata.status]).toEqual(['ok', 'ok']);
    // Had A's calls stayed in the queue, b2 would wait for A's lease (10 s) after b1's end.
    expect(r2.metadata.queue_ms).toBeLessThan(8_000);
    expect(w.serve.events().some((e) => e.event === 'request_start' && e.model === 'sim-a:latest')).toBe(false);
  });

  it("a call of one server for another model is served within the switch bound while another server's model has steady traffic", async () => {
    const w = await world(2, { OLLAMA_MCP_SWITCH_AFTER_MS: '1500' }, 300);
    const [a, b] = w.servers as [RunningServer, RunningServer];
    const steady = Array.from({ length: 30 }, (_, i) =>
      a.run({ model: 'sim-a', prompt: `a${i} @fake:sleep_ms=200` }, { timeout: 120_000 }),
    );
    await waitFor(() => w.serve.events().some((e) => e.event === 'request_start' && e.model === 'sim-a:latest'));
    const other = await b.run({ model: 'sim-b', prompt: 'b @fake:sleep_ms=200' }, { timeout: 120_000 });
    expect(other.metadata.status).toBe('ok');
    const order = w.serve
      .events()
      .filter((e) => e.event === 'request_start')
      .map((e) => e.model);
    expect(order.indexOf('sim-b:latest')).toBeGreaterThan(0);
    expect(order.indexOf('sim-b:latest')).toBeLessThan(20); // not after A's 30 calls
    expect((await Promise.all(steady)).every((r) => r.metadata.status === 'ok')).toBe(true);
  });
});

describe.skipIf(!REDIS_SERVER_AVAILABLE)('team mode: servers on separate data dirs share the queue through Redis', () => {
  it('two servers, each its own data dir, one Redis: at most one load more than through one server', async () => {
    const redis = await startRedisServer();
    cleanups.push(() => redis.dispose());
    const team = (db: number) => ({ OLLAMA_MCP_STATE_URL: `redis://127.0.0.1:${redis.port}/${db}` });
    const one = await loadsOf(2, 1, team(1));
    // Two servers on two sandboxes (data dirs), sharing only the Redis and the Ollama.
    const sandbox = makeSandbox();
    const serve = await startFakeServe({
      env: { FAKE_OLLAMA_MODELS: MODELS, FAKE_OLLAMA_LOAD_MS: '600' },
      traceDir: sandbox.traceDir,
    });
    cleanups.push(() => serve.stop());
    const env = { ...serve.env, FAKE_OLLAMA_MODELS: MODELS, OLLAMA_NUM_PARALLEL: '', OLLAMA_MAX_LOADED_MODELS: '', ...team(2) };
    const servers = [await startServer(sandbox, env), await startServer(makeSandbox(), env)];
    for (const s of servers) cleanups.push(() => s.close().catch(() => {}));
    const statuses = await sessions({ sandbox, serve, servers }, 2);
    expect(statuses.every((s) => s === 'ok')).toBe(true);
    expect(serve.loads()).toBeLessThanOrEqual(one + 1);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
