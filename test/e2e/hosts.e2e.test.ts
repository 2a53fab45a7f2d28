// The built server in front of several fake `ollama serve` instances, one per host (OLLAMA_MCP_HOSTS;
// docs/hosts.md): each host has its own models installed and loaded, its own queue; a call goes where its
// model is loaded, a host that cannot be reached is skipped without counting against anyone, and a call
// may pin a host.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeServe, type FakeServe, type ServeEvent } from '../helpers/fake-serve.js';
import { makeSandbox, readRuns, startServer, type RunningServer, type Sandbox } from './harness.js';

interface HostWorld {
  readonly sandbox: Sandbox;
  readonly serves: FakeServe[];
  readonly servers: RunningServer[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface HostSetup {
  /** What the host has installed. */
  readonly models: string;
  /** Its settings in OLLAMA_MCP_HOSTS (`;weight=3`). */
  readonly settings?: string;
}

/** One fake Ollama per host (loads of `loadMs`, one model fits) and `count` servers on one data dir, sending to all of them. */
async function hostWorld(hosts: readonly HostSetup[], serverEnv: Record<string, string> = {}, count = 1): Promise<HostWorld> {
  const sandbox = makeSandbox();
  const serves: FakeServe[] = [];
  for (const [i, host] of hosts.entries()) {
    const traceDir = path.join(sandbox.root, `serve-${i}`);
    mkdirSync(traceDir, { recursive: true });
    const serve = await startFakeServe({ env: { FAKE_OLLAMA_MODELS: host.models, FAKE_OLLAMA_LOAD_MS: '600' }, traceDir });
    cleanups.push(() => serve.stop());
    serves.push(serve);
  }
  const env = {
    FAKE_OLLAMA_SERVE: '1',
    OLLAMA_MCP_HOSTS: serves.map((serve, i) => `${serve.host}${hosts[i]!.settings ?? ''}`).join(','),
    OLLAMA_NUM_PARALLEL: '',
    OLLAMA_MAX_LOADED_MODELS: '',
    ...serverEnv,
  };
  const servers: RunningServer[] = [];
  for (let i = 0; i < count; i += 1) {
    const server = await startServer(sandbox, env);
    servers.push(server);
    cleanups.push(() => server.close().catch(() => {}));
  }
  return { sandbox, serves, servers };
}

const requests = (serve: FakeServe, model?: string) =>
  serve.events().filter((e) => e.event === 'request_start' && (model === undefined || e.model === model));

/** Did a request of one host generate while one of the other did? */
function overlapped(a: readonly ServeEvent[], b: readonly ServeEvent[]): boolean {
  const spans = (events: readonly ServeEvent[]) => {
    const starts = new Map<string, number>();
    const out: [number, number][] = [];
    for (const e of events) {
      if (e.event === 'request_start' && e.id) starts.set(e.id, e.t);
      if (e.event === 'request_done' && e.id && starts.has(e.id)) out.push([starts.get(e.id)!, e.t]);
    }
    return out;
  };
  return spans(a).some(([s1, e1]) => spans(b).some(([s2, e2]) => s1 < e2 && s2 < e1));
}

/** The most requests sent to Ollama at once (received, not yet answered), over every host's trace. */
function mostAtOnce(serves: readonly FakeServe[]): number {
  const edges = serves
    .flatMap((serve) => serve.events())
    .filter((e) => e.event === 'received' || e.event === 'request_done')
    .map((e) => [e.t, e.event === 'received' ? 1 : -1] as const)
    .sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (now += step));
  return most;
}

describe('several Ollama hosts: the limits hold over all hosts together', () => {
  it("a batch's concurrency and OLLAMA_MCP_CONCURRENCY bound the calls over both hosts, not per host", async () => {
    const both = 'sim-a:latest,sim-b:latest';
    // Each host said to run 4 requests of a model and hold both models: per host, 2 jobs and 3 calls would fit.
    const roomy = { models: both, settings: ';parallel=4;max_loaded=2' };
    const { serves, servers } = await hostWorld([roomy, roomy], { OLLAMA_MCP_CONCURRENCY: '3' });
    const batch = await servers[0]!.client.callTool(
      {
        name: 'ollama_run_many',
        arguments: {
          concurrency: 2,
          jobs: Array.from({ length: 6 }, (_, i) => ({ model: i % 2 ? 'sim-b' : 'sim-a', prompt: `j${i} @fake:sleep_ms=400` })),
        },
      },
      undefined,
      { timeout: 120_000 },
    );
    expect((batch.structuredContent as { summary: { ok: number } }).summary.ok).toBe(6);
    expect(mostAtOnce(serves)).toBe(2);
    const calls = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        servers[0]!.run({ model: i % 2 ? 'sim-b' : 'sim-a', prompt: `c${i} @fake:sleep_ms=400` }),
      ),
    );
    expect(calls.every((c) => c.metadata.status === 'ok')).toBe(true);
    expect(mostAtOnce(serves)).toBeLessThanOrEqual(3);
  });
});

describe('several Ollama hosts: routing by what each has loaded', () => {
  it('two hosts each holding one of two models: 12 alternating calls load nothing more and run side by side', async () => {
    const both = 'sim-a:latest,sim-b:latest';
    const { serves, servers } = await hostWorld([{ models: both }, { models: both }]);
    const [a, b] = serves as [FakeServe, FakeServe];
    const [server] = servers as [RunningServer];
    // Host 1 holds sim-a, host 2 sim-b.
    await server.run({ model: 'sim-a', prompt: 'warm a', host: a.host });
    await server.run({ model: 'sim-b', prompt: 'warm b', host: b.host });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        server.run({ model: i % 2 === 0 ? 'sim-a' : 'sim-b', prompt: `q${i} @fake:sleep_ms=300` }, { timeout: 60_000 }),
      ),
    );
    expect(results.map((r) => r.metadata.status)).toEqual(Array(12).fill('ok'));
    expect(a.loads()).toBe(1);
    expect(b.loads()).toBe(1);
    expect(requests(a, 'sim-b:latest')).toHaveLength(0);
    expect(requests(b, 'sim-a:latest')).toHaveLength(0);
    expect(overlapped(a.events(), b.events())).toBe(true);
  });

  it('a model installed on one host only is routed there', async () => {
    const { serves, servers, sandbox } = await hostWorld([{ models: 'sim-a:latest' }, { models: 'sim-b:latest' }]);
    const [a, b] = serves as [FakeServe, FakeServe];
    const results = await Promise.all([0, 1, 2].map((i) => servers[0]!.run({ model: 'sim-b', prompt: `b${i}` })));
    expect(results.map((r) => r.metadata.status)).toEqual(['ok', 'ok', 'ok']);
    expect(requests(b, 'sim-b:latest')).toHaveLength(3);
    expect(a.events().filter((e) => e.event === 'received')).toHaveLength(0);
    expect(readRuns(sandbox).map((line) => line.host)).toEqual([b.host, b.host, b.host]);
  });

  it('a call pinned to a host runs there; an unknown host is invalid input and spawns nothing', async () => {
    const both = 'sim-a:latest,sim-b:latest';
    const { serves, servers, sandbox } = await hostWorld([{ models: both }, { models: both }]);
    const [a, b] = serves as [FakeServe, FakeServe];
    const pinned = await servers[0]!.run({ model: 'sim-a', prompt: 'here', host: b.host });
    expect(pinned.metadata.status).toBe('ok');
    expect(requests(b, 'sim-a:latest')).toHaveLength(1);
    expect(requests(a)).toHaveLength(0);
    const unknown = await servers[0]!.run({ model: 'sim-a', prompt: 'nowhere', host: 'gpu-box:11434', task_id: 'pin-1' });
    expect(unknown.metadata.status).toBe('invalid_input');
    expect(unknown.metadata.error?.message).toMatch(/unknown Ollama host `gpu-box:11434`/);
    expect(unknown.metadata.escalate).toBe(false);
    expect(a.events().filter((e) => e.event === 'received')).toHaveLength(0);
    expect(b.events().filter((e) => e.event === 'received')).toHaveLength(1);
    expect(readRuns(sandbox).at(-1)).toMatchObject({ status: 'invalid_input', task_id: 'pin-1' });
  });

  it('weights: the heavier host takes most of a burst when both could serve it', async () => {
    // All 8 routed at once (OLLAMA_MCP_CONCURRENCY 8): the weights divide the calls queued on the hosts.
    const hosts = [{ models: 'sim-a:latest', settings: ';weight=3' }, { models: 'sim-a:latest' }];
    const { serves, servers } = await hostWorld(hosts, { OLLAMA_MCP_CONCURRENCY: '8' });
    const [heavy, light] = serves as [FakeServe, FakeServe];
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => servers[0]!.run({ model: 'sim-a', prompt: `w${i} @fake:sleep_ms=200` })),
    );
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    expect(requests(heavy).length).toBeGreaterThanOrEqual(5);
    expect(requests(light).length).toBeGreaterThanOrEqual(1);
  });
});

describe('several Ollama hosts: a host that cannot be reached', () => {
  it('one host down at start: every call ends ok on the other, none counted, nothing escalated', async () => {
    const both = 'sim-a:latest,sim-b:latest';
    const { serves, servers, sandbox } = await hostWorld([{ models: both }, { models: both }]);
    const [down, up] = serves as [FakeServe, FakeServe];
    await down.stop();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        servers[0]!.run({ model: i % 2 === 0 ? 'sim-a' : 'sim-b', prompt: `d${i}`, task_id: `down-${i}` }),
      ),
    );
    for (const result of results) {
      expect(result.metadata).toMatchObject({ status: 'ok', retry_count: 0, escalate: false });
    }
    expect(requests(up)).toHaveLength(6);
    const lines = readRuns(sandbox);
    for (const line of lines.filter((l) => l.host === down.host)) {
      expect(line).toMatchObject({ status: 'ollama_unreachable', will_retry: true });
      expect(line.warnings).toEqual([expect.objectContaining({ kind: 'not_counted' })]);
    }
    // ollama_health lists both hosts, the one that is down as such.
    const health = await servers[0]!.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const hosts = (health.structuredContent as { hosts: { name: string; reachable: boolean | null; running: number }[] }).hosts;
    expect(hosts.map((h) => [h.name, h.reachable])).toEqual([
      [down.host, false],
      [up.host, true],
    ]);
    // Runs work on the other host: health is ok, and the host that is down is a warning, not a problem.
    const report = health.structuredContent as { ok: boolean; problems: string[]; warnings: string[] };
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.warnings.join('\n')).toContain(`Ollama host ${down.host} cannot be reached`);
  });

  it('a host going down mid-run: its next call goes on at once on the other host, not counted', async () => {
    const both = 'sim-a:latest,sim-b:latest';
    const { serves, servers, sandbox } = await hostWorld([{ models: both }, { models: both }]);
    const [a, b] = serves as [FakeServe, FakeServe];
    const [server] = servers as [RunningServer];
    await server.run({ model: 'sim-a', prompt: 'warm a', host: a.host });
    await server.run({ model: 'sim-b', prompt: 'warm b', host: b.host });
    await a.stop();
    const result = await server.run({ model: 'sim-a', prompt: 'after', task_id: 'mid-1' });
    expect(result.metadata).toMatchObject({ status: 'ok', retry_count: 0, escalate: false });
    const lines = readRuns(sandbox).filter((line) => line.task_id === 'mid-1');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ status: 'ollama_unreachable', host: a.host, will_retry: true, retry_count: 0 });
    expect(lines[0]!.warnings).toEqual([expect.objectContaining({ kind: 'not_counted' })]);
    expect(lines[1]).toMatchObject({ status: 'ok', host: b.host });
    // The circuit of sim-a is untouched: the host failed, not the model.
    expect(result.metadata.circuit).toMatchObject({ state: 'closed', consecutive_failures: 0 });
  });

  it('three hosts, the first down: each model goes to the one host that has it, none counted', async () => {
    const { serves, servers, sandbox } = await hostWorld([
      { models: 'sim-a:latest,sim-b:latest' },
      { models: 'sim-a:latest' },
      { models: 'sim-b:latest' },
    ]);
    const [down, onlyA, onlyB] = serves as [FakeServe, FakeServe, FakeServe];
    await down.stop();
    const results = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        servers[0]!.run({ model: i % 2 === 0 ? 'sim-a' : 'sim-b', prompt: `t${i}`, task_id: `three-${i}` }),
      ),
    );
    for (const result of results) expect(result.metadata).toMatchObject({ status: 'ok', retry_count: 0, escalate: false });
    expect(requests(onlyA, 'sim-a:latest')).toHaveLength(2);
    expect(requests(onlyB, 'sim-b:latest')).toHaveLength(2);
    const ok = readRuns(sandbox).filter((line) => line.status === 'ok');
    expect(ok.map((line) => line.host).sort()).toEqual([onlyA.host, onlyA.host, onlyB.host, onlyB.host].sort());
  });

  it('every host down: the call ends ollama_unreachable and counts, as with one host', async () => {
    const { serves, servers } = await hostWorld([{ models: 'sim-a:latest' }, { models: 'sim-a:latest' }]);
    for (const serve of serves) await serve.stop();
    const result = await servers[0]!.run({ model: 'sim-a', prompt: 'x', task_id: 'all-down' });
    expect(result.metadata).toMatchObject({ status: 'ollama_unreachable', escalate: true });
  });

  it('a model that crashes on one host counts against the model, not the host', async () => {
    const { serves, servers } = await hostWorld([{ models: 'sim-a:latest' }, { models: 'sim-a:latest' }]);
    const [a, b] = serves as [FakeServe, FakeServe];
    const first = await servers[0]!.run({ model: 'sim-a', prompt: 'x @fake:error=oom', host: a.host, task_id: 'oom-1' });
    expect(first.metadata).toMatchObject({ status: 'crashed', retry_count: 0 });
    expect(first.metadata.circuit.consecutive_failures).toBe(1);
    // No circuit per host: the same task on the other host is its first retry, and the model's second failure.
    const second = await servers[0]!.run({ model: 'sim-a', prompt: 'x @fake:error=oom', host: b.host, task_id: 'oom-1' });
    expect(second.metadata).toMatchObject({ status: 'crashed', retry_count: 1 });
    expect(second.metadata.circuit.consecutive_failures).toBe(2);
  });
});

describe('several Ollama hosts, several servers', () => {
  it("two servers sharing two hosts each holding one model: every call ok, no load beyond each host's one", async () => {
    const both = 'sim-a:latest,sim-b:latest';
    const { serves, servers } = await hostWorld([{ models: both }, { models: both }], {}, 2);
    const [a, b] = serves as [FakeServe, FakeServe];
    await servers[0]!.run({ model: 'sim-a', prompt: 'warm a', host: a.host });
    await servers[1]!.run({ model: 'sim-b', prompt: 'warm b', host: b.host });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        servers[i % 2]!.run({ model: i % 4 < 2 ? 'sim-a' : 'sim-b', prompt: `s${i} @fake:sleep_ms=200` }, { timeout: 60_000 }),
      ),
    );
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    expect(a.loads() + b.loads()).toBeLessThanOrEqual(3);
  });
});
