// The built server against the fake shared `ollama serve`, whose scheduler loads a model beside others
// only when their sizes fit its memory (FAKE_OLLAMA_VRAM_GB). The server must learn what fits from the
// sizes `ollama ps` and `ollama list` show, not from how many models were once loaded together, and a
// wait inside Ollama that its own wrong guess caused must not count against the caller's task.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeServe, type FakeServe, type ServeEvent } from '../helpers/fake-serve.js';
import { FAKE_OLLAMA, makeSandbox, readRuns, startServer, type RunningServer, type Sandbox } from './harness.js';

const MODELS = 'sim-a:latest,sim-b:latest,sim-c:latest,sim-small:latest';

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

/** One fake Ollama with `vramGb` of memory and models of `modelGb` (`model=GB,...`), and the built server in front of it. */
async function world(vramGb: string, modelGb: string): Promise<World> {
  const sandbox = makeSandbox();
  const serveEnv = {
    FAKE_OLLAMA_MODELS: MODELS,
    FAKE_OLLAMA_VRAM_GB: vramGb,
    FAKE_OLLAMA_MODEL_GB: modelGb,
    FAKE_OLLAMA_LOAD_MS: '300',
  };
  const serve = await startFakeServe({ env: serveEnv, traceDir: sandbox.traceDir });
  const server = await startServer(sandbox, {
    ...serve.env,
    FAKE_OLLAMA_MODELS: MODELS,
    OLLAMA_NUM_PARALLEL: '',
    OLLAMA_MAX_LOADED_MODELS: '',
  });
  const w = { sandbox, serve, server };
  worlds.push(w);
  return w;
}

/** Another client of the same Ollama (a RAG app, say) loads `model` and keeps it loaded for an hour. */
function anotherClientLoads(w: World, model: string): void {
  const env = { PATH: process.env.PATH ?? '', ...w.serve.env, FAKE_OLLAMA_MODELS: MODELS };
  const loaded = spawnSync(process.execPath, [FAKE_OLLAMA, 'run', model, '--keepalive', '1h'], {
    input: '',
    env,
    encoding: 'utf8',
  });
  expect(loaded.status, loaded.stderr).toBe(0);
}

/** Run `model` once, then wait until `ollama_health` shows what `ollama ps` said after its load. */
async function warmUp(w: World, model: string, expectLoaded: string[]): Promise<void> {
  expect((await w.server.run({ model, prompt: 'warm up' })).metadata.status).toBe('ok');
  await expect
    .poll(
      async () => {
        const health = await w.server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
        return [...(health.structuredContent as { runs: { loaded_models: string[] } }).runs.loaded_models].sort();
      },
      { timeout: 10_000 },
    )
    .toEqual(expectLoaded);
}

/** The index of the first trace event matching. */
const indexOf = (events: readonly ServeEvent[], match: (e: ServeEvent) => boolean) => events.findIndex(match);

/** The ids of the requests for `model` Ollama received, in order. */
const requestsFor = (events: readonly ServeEvent[], model: string) =>
  events.filter((e) => e.event === 'received' && e.model === model).map((e) => e.id);

/** Start a long call of sim-a (after the warm-up) and wait until Ollama runs it; returns the call and its request's id. */
async function longCallOfA(w: World, sleepMs: number) {
  const call = w.server.run({ model: 'sim-a', prompt: `long @fake:sleep_ms=${sleepMs}`, task_id: 'job-a' });
  const running = () => {
    const id = requestsFor(w.serve.events(), 'sim-a:latest')[1];
    return w.serve.events().some((e) => e.event === 'request_start' && e.id === id);
  };
  await expect.poll(running, { timeout: 10_000 }).toBe(true);
  return { call, id: requestsFor(w.serve.events(), 'sim-a:latest')[1]! };
}

describe('what fits together in Ollama is learned from sizes', () => {
  it('two big models are not sent together because a big one was once loaded beside a small one', async () => {
    // 6 GB: a 4 GB model fits beside the 0.5 GB one, never beside another 4 GB model.
    const w = await world('6', 'sim-a=4,sim-b=4,sim-small=0.5');
    anotherClientLoads(w, 'sim-small');
    await warmUp(w, 'sim-a', ['sim-a:latest', 'sim-small:latest']); // `ollama ps` showed two models at once
    const long = await longCallOfA(w, 4_000);
    const other = await w.server.run({ model: 'sim-b', prompt: 'other', task_id: 'job-b', start_timeout_ms: 1_500 });
    expect(other.metadata).toMatchObject({ status: 'ok', retry_count: 0, escalate: false });
    expect((await long.call).metadata.status).toBe('ok');
    // sim-b was sent to Ollama only once sim-a was done: it never waited inside Ollama.
    const events = w.serve.events();
    const longDone = indexOf(events, (e) => e.event === 'request_done' && e.id === long.id);
    const bReceived = indexOf(events, (e) => e.event === 'received' && e.model === 'sim-b:latest');
    expect(bReceived).toBeGreaterThan(longDone);
    expect(events.filter((e) => e.event === 'request_cancelled')).toEqual([]);
  });

  it("a start_timeout after the server's own wrong guess is not counted: no escalation, and the retry waits its turn", async () => {
    // sim-a (3 GB) and sim-small (2.8 GB) were seen together: 5.8 GB. sim-c was never seen loaded;
    // its file (2.7 GB in `ollama list`) makes it look as if it fits beside sim-a. Loaded it takes 3.2 GB: it does not.
    const w = await world('6', 'sim-a=3,sim-small=2.8,sim-c=3.2');
    anotherClientLoads(w, 'sim-small');
    await warmUp(w, 'sim-a', ['sim-a:latest', 'sim-small:latest']);
    const long = await longCallOfA(w, 6_000);
    // The task has failed once before and allows one retry: a counted failure now would escalate it.
    const call = { model: 'sim-c', prompt: 'c', task_id: 'job-c', retry_count: 1, max_retries: 1, start_timeout_ms: 1_500 };
    const first = await w.server.run(call);
    expect(first.metadata).toMatchObject({
      status: 'start_timeout',
      escalate: false,
      escalation_reason: null,
      retryable: true,
      retry_count: 1,
      retries_left: 1,
    });
    const note = first.metadata.warnings.find((warning) => warning.kind === 'not_counted');
    expect(note?.message).toMatch(/sim-c:latest .*beside sim-a:latest.*Not counted against the task/);
    expect(first.next).toMatch(/^Retry with the same task_id \(1 try left\): this attempt is not counted/);
    const line = readRuns(w.sandbox).find((record) => record.run_id === first.metadata.run_id);
    expect(line).toMatchObject({ status: 'start_timeout', retry_count: 1, escalate: false, warnings: [{ kind: 'not_counted' }] });

    // The retry is not sent beside sim-a again: it waits in this server's queue, then runs.
    const retry = await w.server.run(call);
    expect(retry.metadata).toMatchObject({ status: 'ok', retry_count: 1, escalate: false });
    expect((await long.call).metadata.status).toBe('ok');
    const events = w.serve.events();
    const longDone = indexOf(events, (e) => e.event === 'request_done' && e.id === long.id);
    const cRequests = requestsFor(events, 'sim-c:latest');
    expect(cRequests).toHaveLength(2);
    expect(indexOf(events, (e) => e.event === 'received' && e.id === cRequests[1])).toBeGreaterThan(longDone);
  });
});
