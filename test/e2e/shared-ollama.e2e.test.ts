// The built server against the fake shared `ollama serve` (test/fixtures/fake-ollama.md, "Shared server
// mode"): Ollama runs one request of a model at a time, keeps the models that fit loaded, loads in its
// own time, and aborts a load whose client goes away. The server must keep that waiting in its own
// queue, never time it, and order its calls by what is loaded.
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeServe, type FakeServe, type ServeEvent } from '../helpers/fake-serve.js';
import { FAKE_OLLAMA, makeSandbox, readRuns, readTrace, startServer, type RunningServer, type Sandbox } from './harness.js';

const MODELS = 'sim-a:latest,sim-b:latest,llama3.2:latest';

interface World {
  readonly sandbox: Sandbox;
  readonly serve: FakeServe;
  readonly server: RunningServer;
}

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) {
    await world.server.close();
    await world.serve.stop();
  }
});

/**
 * One fake Ollama (`serveEnv`: its settings) and the built server in front of it. The server is told
 * nothing about Ollama's settings unless `serverEnv` says so (the harness's defaults describe the
 * per-process fake, not this one).
 */
async function world(serveEnv: Record<string, string>, serverEnv: Record<string, string> = {}): Promise<World> {
  const sandbox = makeSandbox();
  const serve = await startFakeServe({ env: { FAKE_OLLAMA_MODELS: MODELS, ...serveEnv }, traceDir: sandbox.traceDir });
  const server = await startServer(sandbox, {
    ...serve.env,
    FAKE_OLLAMA_MODELS: MODELS,
    OLLAMA_NUM_PARALLEL: '',
    OLLAMA_MAX_LOADED_MODELS: '',
    ...serverEnv,
  });
  const w = { sandbox, serve, server };
  worlds.push(w);
  return w;
}

/** The most requests of one model generating at the same moment, from the server's trace. */
function maxGenerating(events: readonly ServeEvent[], model: string): number {
  let now = 0;
  let max = 0;
  for (const e of events) {
    if (e.model !== model) continue;
    if (e.event === 'request_start') now += 1;
    if (e.event === 'request_done' || e.event === 'request_cancelled' || e.event === 'request_failed') now = Math.max(0, now - 1);
    max = Math.max(max, now);
  }
  return max;
}

const started = (events: readonly ServeEvent[]) => events.filter((e) => e.event === 'request_start').map((e) => e.model);

describe('one shared Ollama: the waiting happens in this server, untimed', () => {
  it("four 1 s calls with timeout_ms 2500 all answer: they wait for Ollama's one slot here, not inside Ollama", async () => {
    const { serve, server } = await world({});
    const results = await Promise.all(
      [0, 1, 2, 3].map((i) => server.run({ model: 'sim-a', prompt: `job ${i} @fake:sleep_ms=1000`, timeout_ms: 2_500 })),
    );
    expect(results.map((r) => r.metadata.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(maxGenerating(serve.events(), 'sim-a:latest')).toBe(1);
    // Only one request at a time ever reached Ollama: none waited there for a slot.
    expect(serve.events().filter((e) => e.event === 'received')).toHaveLength(4);
    const queued = results.map((r) => r.metadata.queue_ms).sort((a, b) => a - b);
    expect(queued[3]).toBeGreaterThanOrEqual(2_500); // the last waited for three others, here
  });

  it('a cold load is not timed: a 4 s load and a 3 s timeout_ms answer, and the result says it paid the load', async () => {
    const { serve, server } = await world({ FAKE_OLLAMA_LOAD_MS: '4000' }, { OLLAMA_MCP_PROGRESS_INTERVAL_MS: '300' });
    const messages: string[] = [];
    const result = await server.client.callTool(
      {
        name: 'ollama_run',
        arguments: { model: 'sim-a', prompt: 'quick @fake:sleep_ms=200', timeout_ms: 3_000, response_format: 'detailed' },
      },
      undefined,
      { onprogress: (p) => messages.push(p.message ?? ''), timeout: 30_000 },
    );
    const reply = result.structuredContent as { cold_load_ms?: number; metadata: Record<string, unknown> };
    const metadata = reply.metadata;
    expect(metadata).toMatchObject({ status: 'ok', cold_load: true });
    expect(reply.cold_load_ms).toBeGreaterThanOrEqual(4_000); // the concise part says it too
    expect(metadata.start_ms as number).toBeGreaterThanOrEqual(4_000);
    expect((metadata.usage as { load_ms: number }).load_ms).toBeGreaterThanOrEqual(4_000);
    expect(serve.loads()).toBe(1);
    expect(messages.some((m) => /^sim-a: waiting for sim-a to load for \d+ s \(not counted in timeout_ms\)/.test(m))).toBe(true);
  });

  it('12 calls alternating between two models that do not fit together load each model once', async () => {
    const { serve, server } = await world({ FAKE_OLLAMA_LOAD_MS: '600' });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        server.run({ model: i % 2 === 0 ? 'sim-a' : 'sim-b', prompt: `q${i} @fake:sleep_ms=100` }),
      ),
    );
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    expect(serve.loads()).toBeLessThanOrEqual(3);
    expect(started(serve.events())).toEqual([...Array(6).fill('sim-a:latest'), ...Array(6).fill('sim-b:latest')]);
  });

  it('an ollama_run_many batch goes through the same queue: alternating jobs load each model once', async () => {
    const { serve, server } = await world({ FAKE_OLLAMA_LOAD_MS: '600' });
    const result = await server.client.callTool(
      {
        name: 'ollama_run_many',
        arguments: {
          concurrency: 3,
          jobs: Array.from({ length: 12 }, (_, i) => ({
            model: i % 2 === 0 ? 'sim-a' : 'sim-b',
            prompt: `j${i} @fake:sleep_ms=100`,
          })),
        },
      },
      undefined,
      { timeout: 60_000 },
    );
    const batch = result.structuredContent as { summary: { ok: number } };
    expect(batch.summary.ok).toBe(12);
    expect(serve.loads()).toBeLessThanOrEqual(3);
  });

  it('a call for another model is answered within the switch bound while the loaded model has steady traffic', async () => {
    const { serve, server } = await world({ FAKE_OLLAMA_LOAD_MS: '300' }, { OLLAMA_MCP_SWITCH_AFTER_MS: '1500' });
    const steady = Array.from({ length: 30 }, (_, i) => server.run({ model: 'sim-a', prompt: `a${i} @fake:sleep_ms=200` }));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const other = await server.run({ model: 'sim-b', prompt: 'b @fake:sleep_ms=200' });
    expect(other.metadata.status).toBe('ok');
    // It waited the bound (1.5 s) and the call running on sim-a (0.2 s), not the 30 calls.
    expect(other.metadata.queue_ms).toBeGreaterThanOrEqual(1_000);
    expect(other.metadata.queue_ms).toBeLessThan(1_500 + 2_000);
    const order = started(serve.events());
    expect(order.indexOf('sim-b:latest')).toBeLessThan(20);
    await Promise.all(steady);
  });

  it('runs two models side by side when they fit together', async () => {
    const { serve, server } = await world({ FAKE_OLLAMA_VRAM_GB: '10' }, { OLLAMA_MCP_MAX_LOADED_MODELS: '2' });
    const [a, b] = await Promise.all([
      server.run({ model: 'sim-a', prompt: 'a @fake:sleep_ms=1500' }),
      server.run({ model: 'sim-b', prompt: 'b @fake:sleep_ms=1500' }),
    ]);
    expect([a.metadata.status, b.metadata.status]).toEqual(['ok', 'ok']);
    expect(a.metadata.queue_ms).toBeLessThan(500);
    expect(b.metadata.queue_ms).toBeLessThan(500);
    expect(serve.loads()).toBe(2);
  });

  it("sends a call's keepalive only while no call for another model waits here", async () => {
    const { sandbox, server } = await world({ FAKE_OLLAMA_LOAD_MS: '300' });
    const first = server.run({ model: 'sim-a', prompt: 'a1 @fake:sleep_ms=800', keepalive: '1h' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const other = server.run({ model: 'sim-b', prompt: 'b' });
    const second = server.run({ model: 'sim-a', prompt: 'a2', keepalive: '1h' });
    await Promise.all([first, other, second]);
    const argv = (prompt: string) => {
      const runs = readTrace(sandbox).filter((e) => e.event === 'prompt' && e.prompt?.startsWith(prompt));
      const pid = runs[0]!.pid;
      return readTrace(sandbox).find((e) => e.event === 'start' && e.pid === pid)!.argv!;
    };
    expect(argv('a1')).toContain('--keepalive=1h');
    expect(argv('a2')).not.toContain('--keepalive=1h');
  });
});

describe('one shared Ollama: the wait before the answer has its own limit', () => {
  it('a load that passes start_timeout_ms ends as start_timeout, aborts the load, and leaves the circuit alone', async () => {
    const { serve, server, sandbox } = await world({ FAKE_OLLAMA_LOAD_MS: '10000' });
    const result = await server.run({ model: 'sim-a', prompt: 'x', task_id: 'slow-load', start_timeout_ms: 1_500 });
    expect(result.metadata).toMatchObject({
      status: 'start_timeout',
      escalate: false,
      retryable: true,
      circuit: { state: 'closed', consecutive_failures: 0 },
    });
    await expect.poll(() => serve.events().some((e) => e.event === 'load_aborted'), { timeout: 10_000 }).toBe(true);
    expect(readRuns(sandbox).at(-1)).toMatchObject({ status: 'start_timeout', task_id: 'slow-load' });
    // Counted for the task: the next attempt is its second.
    const again = await server.run({ model: 'sim-a', prompt: 'x', task_id: 'slow-load', start_timeout_ms: 1_000 });
    expect(again.metadata.retry_count).toBe(1);
  });

  it("a call cancelled while its model loads ends at once, is logged, aborts the load, and is not the model's failure", async () => {
    const { serve, server, sandbox } = await world({ FAKE_OLLAMA_LOAD_MS: '10000' });
    const controller = new AbortController();
    const call = server.run({ model: 'sim-a', prompt: 'x', task_id: 'cancel-load' }, { signal: controller.signal });
    await expect.poll(() => serve.events().some((e) => e.event === 'load_start'), { timeout: 10_000 }).toBe(true);
    const cancelledAt = Date.now();
    controller.abort();
    await expect(call).rejects.toThrow();
    await expect.poll(() => serve.events().some((e) => e.event === 'load_aborted'), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => readRuns(sandbox).at(-1)?.status, { timeout: 10_000 }).toBe('cancelled');
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
    const status = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const circuits = (status.structuredContent as { circuits: { model: string; consecutive_failures: number }[] }).circuits;
    expect(circuits.find((c) => c.model === 'sim-a:latest')?.consecutive_failures ?? 0).toBe(0);
  });
});

describe('one shared Ollama: `ollama ps` never blocks a call', () => {
  it.each([
    ['fails', 'echo "Error: something broke" >&2; exit 1'],
    ['prints something unexpected', 'echo "<html>proxy error</html>"; exit 0'],
    ['hangs', 'exec sleep 60'],
  ])('when `ollama ps` %s, calls still run in order and stderr says so once', async (_what, psScript) => {
    const sandbox = makeSandbox();
    const wrapper = path.join(sandbox.fakeStateDir, 'ollama');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nif [ "$1" = ps ]; then ${psScript}; fi\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE_OLLAMA)} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const serve = await startFakeServe({ env: { FAKE_OLLAMA_MODELS: MODELS }, traceDir: sandbox.traceDir });
    const server = await startServer(sandbox, {
      ...serve.env,
      OLLAMA_BIN: wrapper,
      FAKE_OLLAMA_MODELS: MODELS,
      OLLAMA_NUM_PARALLEL: '',
      OLLAMA_MAX_LOADED_MODELS: '',
    });
    worlds.push({ sandbox, serve, server });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        server.run({ model: i % 2 === 0 ? 'sim-a' : 'sim-b', prompt: `p${i} @fake:sleep_ms=100` }),
      ),
    );
    expect(results.every((r) => r.metadata.status === 'ok')).toBe(true);
    // A hanging `ollama ps` is given up after 3 s.
    await expect.poll(() => server.stderr(), { timeout: 8_000 }).toContain('cannot read which models Ollama has loaded');
    expect(server.stderr().split('cannot read which models Ollama has loaded').length - 1).toBe(1);
  });
});
