// The fake `ollama serve` schedules like the real one (server/sched.go; the shared notes' "One shared
// server"): each fact shown through real CLI processes against one server, asserted on the order and
// counts of its trace, never on exact durations.
import { describe, expect, it } from 'vitest';
import {
  BUSY_LINE,
  at,
  errorText,
  firstStdoutAt,
  requestOf,
  untilRequest,
  run,
  steps,
  useServe,
  waitFor,
  waitForEvent,
} from './shared-mode.js';

describe('parallel slots (OLLAMA_NUM_PARALLEL)', () => {
  it('with the default 1, two runs of one model overlap by nothing: the second prints nothing while the first generates', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '100' });
    const subs = [run(serve, 'llama3.2', 'one @fake:sleep_ms=300'), run(serve, 'llama3.2', 'two @fake:sleep_ms=300')];
    const outs = subs.map((sub) => firstStdoutAt(sub));
    const results = await Promise.all(subs);
    expect(results.map((r) => r.stdout).sort()).toEqual([
      'fake answer from llama3.2: one\n\n',
      'fake answer from llama3.2: two\n\n',
    ]);
    const events = serve.events();
    const ids = await Promise.all(subs.map((sub) => requestOf(serve, sub.pid)));
    const [first, second] = [0, 1].sort(
      (x, y) => at(events, 'request_start', { id: ids[x] }) - at(events, 'request_start', { id: ids[y] }),
    );
    const firstDone = at(events, 'request_done', { id: ids[first!] });
    expect(at(events, 'request_start', { id: ids[second!] })).toBeGreaterThan(firstDone);
    expect(await outs[second!]).toBeGreaterThanOrEqual(events[firstDone]!.t);
    expect(serve.loads()).toBe(1);
  });

  it('a request for a busy model is attached at once and waits inside the server for the slot', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '100' });
    const first = run(serve, 'llama3.2', 'one @fake:hang');
    const firstId = (await untilRequest(serve, first.pid, 'request_start', 'the first generation')).id;
    const second = run(serve, 'llama3.2', 'two');
    const secondOut = firstStdoutAt(second);
    const secondId = await requestOf(serve, second.pid);
    expect((await waitForEvent(serve, (e) => e.event === 'attached' && e.id === secondId, 'the second')).fast_path).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(at(serve.events(), 'request_start', { id: secondId })).toBe(-1);
    first.kill('SIGINT'); // the first stops generating: exit 0, its connection closes, the slot frees
    expect((await first).exitCode).toBe(0);
    expect((await second).stdout).toBe('fake answer from llama3.2: two\n\n');
    const events = serve.events();
    const cancelled = at(events, 'request_cancelled', { id: firstId });
    expect(at(events, 'request_start', { id: secondId })).toBeGreaterThan(cancelled);
    expect(await secondOut).toBeGreaterThanOrEqual(events[cancelled]!.t);
  });

  it('with OLLAMA_NUM_PARALLEL=2 they run at the same time', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '100', OLLAMA_NUM_PARALLEL: '2' });
    const first = run(serve, 'llama3.2', 'one @fake:hang');
    const firstId = (await untilRequest(serve, first.pid, 'request_start', 'the first generation')).id;
    const second = await run(serve, 'llama3.2', 'two');
    expect(second.stdout).toBe('fake answer from llama3.2: two\n\n');
    expect(at(serve.events(), 'request_done')).toBeGreaterThan(at(serve.events(), 'request_start', { id: firstId }));
    first.kill('SIGKILL');
    await first;
  });
});

describe('loaded models: capacity and memory', () => {
  it('two 4 GB models in 6 GB alternate, a load each; in 10 GB both stay loaded', async () => {
    const small = await useServe({ FAKE_OLLAMA_LOAD_MS: '100' });
    for (const model of ['llama3.2', 'qwen2.5-coder:7b', 'llama3.2', 'qwen2.5-coder:7b']) {
      expect((await run(small, model, 'hi')).exitCode).toBe(0);
    }
    expect(small.loads()).toBe(4);
    expect(steps(small.events(), ['load_done', 'unload'])).toEqual([
      'load_done:llama3.2:latest',
      'unload:llama3.2:latest',
      'load_done:qwen2.5-coder:7b',
      'unload:qwen2.5-coder:7b',
      'load_done:llama3.2:latest',
      'unload:llama3.2:latest',
      'load_done:qwen2.5-coder:7b',
    ]);
    expect(
      small
        .events()
        .filter((e) => e.event === 'unload')
        .map((e) => e.reason),
    ).toEqual(['evicted', 'evicted', 'evicted']);

    const big = await useServe({ FAKE_OLLAMA_LOAD_MS: '100', FAKE_OLLAMA_VRAM_GB: '10' });
    for (const model of ['llama3.2', 'qwen2.5-coder:7b', 'llama3.2', 'qwen2.5-coder:7b']) await run(big, model, 'hi');
    expect(big.loads()).toBe(2);
    expect(at(big.events(), 'unload')).toBe(-1);
  });

  it('OLLAMA_MAX_LOADED_MODELS=1 evicts even when memory is left; FAKE_OLLAMA_MODEL_GB sizes the models', async () => {
    const capped = await useServe({ FAKE_OLLAMA_LOAD_MS: '100', FAKE_OLLAMA_VRAM_GB: '10', OLLAMA_MAX_LOADED_MODELS: '1' });
    for (const model of ['llama3.2', 'qwen2.5-coder:7b', 'llama3.2']) await run(capped, model, 'hi');
    expect(capped.loads()).toBe(3);

    const sized = await useServe({ FAKE_OLLAMA_LOAD_MS: '100', FAKE_OLLAMA_MODEL_GB: 'llama3.2=2,qwen2.5-coder:7b=3' });
    for (const model of ['llama3.2', 'qwen2.5-coder:7b', 'llama3.2']) await run(sized, model, 'hi');
    expect(sized.loads()).toBe(2);
  });

  it('two models that do not fit, asked at once: one loads, runs, is unloaded, then the other loads', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '150' });
    const [a, b] = await Promise.all([
      run(serve, 'llama3.2', 'a @fake:sleep_ms=200'),
      run(serve, 'qwen2.5-coder:7b', 'b @fake:sleep_ms=200'),
    ]);
    expect([a.exitCode, b.exitCode]).toEqual([0, 0]);
    const order = steps(serve.events(), ['load_start', 'load_done', 'request_start', 'request_done', 'unload']).map((s) =>
      s.replace(/:.*/, ''),
    );
    expect(order).toEqual([
      'load_start',
      'load_done',
      'request_start',
      'request_done',
      'unload',
      'load_start',
      'load_done',
      'request_start',
      'request_done',
    ]);
  });
});

describe('the pending queue', () => {
  it('eviction waits until the victim has no request in flight', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '100' });
    const busy = run(serve, 'llama3.2', 'long @fake:hang');
    const busyId = (await untilRequest(serve, busy.pid, 'request_start', 'the long generation')).id;
    const other = run(serve, 'qwen2.5-coder:7b', 'next');
    const otherId = await requestOf(serve, other.pid);
    await waitForEvent(serve, (e) => e.event === 'evict', 'the eviction');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(at(serve.events(), 'unload')).toBe(-1); // still generating: still loaded
    busy.kill('SIGINT');
    expect((await other).stdout).toBe('fake answer from qwen2.5-coder:7b: next\n\n');
    const events = serve.events();
    expect(at(events, 'queued', { id: otherId })).toBeLessThan(at(events, 'evict'));
    expect(at(events, 'unload', { model: 'llama3.2:latest' })).toBeGreaterThan(at(events, 'request_cancelled', { id: busyId }));
    expect(at(events, 'load_start', { id: otherId })).toBeGreaterThan(at(events, 'unload', { model: 'llama3.2:latest' }));
  });

  it('a busy model keeps taking fast-path requests while a load waits for it (the starvation Ollama allows)', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '100' });
    const first = run(serve, 'llama3.2', 'a1 @fake:hang');
    await untilRequest(serve, first.pid, 'request_start', 'the first generation');
    const waiting = run(serve, 'qwen2.5-coder:7b', 'b');
    const waitingId = (await untilRequest(serve, waiting.pid, 'queued', 'the queued load')).id;
    const late = run(serve, 'llama3.2', 'a2 @fake:sleep_ms=200');
    const lateId = await requestOf(serve, late.pid);
    expect((await waitForEvent(serve, (e) => e.event === 'attached' && e.id === lateId, 'the late request')).fast_path).toBe(
      true,
    );
    first.kill('SIGINT');
    await Promise.all([first, waiting, late]);
    const events = serve.events();
    // The late request arrived after the load was queued, yet ran first: the load waited for both.
    expect(at(events, 'queued', { id: waitingId })).toBeLessThan(at(events, 'received', { id: lateId }));
    expect(at(events, 'request_done', { id: lateId })).toBeLessThan(at(events, 'unload', { model: 'llama3.2:latest' }));
    expect(at(events, 'load_start', { id: waitingId })).toBeGreaterThan(at(events, 'unload', { model: 'llama3.2:latest' }));
  });

  it('past OLLAMA_MAX_QUEUE a request fails at once with the exact 503', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '5000', OLLAMA_MAX_QUEUE: '1' });
    const loading = run(serve, 'llama3.2', 'a');
    await waitForEvent(serve, (e) => e.event === 'load_start', 'the first load');
    const queued = run(serve, 'qwen2.5-coder:7b', 'b');
    await untilRequest(serve, queued.pid, 'queued', 'the queued request');
    const refused = await run(serve, 'qwen3:8b', 'c');
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe('');
    expect(errorText(refused.stderr)).toBe(BUSY_LINE);
    expect(serve.events().some((e) => e.event === 'rejected')).toBe(true);
    loading.kill('SIGKILL');
    queued.kill('SIGKILL');
    await Promise.all([loading, queued]);
  });
});

describe('which model is evicted (findRunnerToUnload)', () => {
  const TWO_FIT = { FAKE_OLLAMA_LOAD_MS: '50', FAKE_OLLAMA_VRAM_GB: '10', OLLAMA_MAX_LOADED_MODELS: '2' };

  it('among idle models, the one with the shortest keep-alive', async () => {
    for (const [short, long] of [
      ['llama3.2:latest', 'qwen2.5-coder:7b'],
      ['qwen2.5-coder:7b', 'llama3.2:latest'],
    ] as const) {
      const serve = await useServe(TWO_FIT);
      await run(serve, short, 'hi', ['--keepalive', '1m']);
      await run(serve, long, 'hi', ['--keepalive', '10m']);
      await run(serve, 'qwen3:8b', 'hi');
      expect(
        serve
          .events()
          .filter((e) => e.event === 'unload')
          .map((e) => e.model),
      ).toEqual([short]);
    }
  });

  it('an idle model before a busy one, whatever their keep-alive', async () => {
    const serve = await useServe(TWO_FIT);
    const busy = run(serve, 'llama3.2', 'x @fake:hang', ['--keepalive', '1m']);
    await waitForEvent(serve, (e) => e.event === 'request_start', 'the busy model');
    await run(serve, 'qwen2.5-coder:7b', 'hi', ['--keepalive', '10m']);
    await run(serve, 'qwen3:8b', 'hi');
    expect(
      serve
        .events()
        .filter((e) => e.event === 'unload')
        .map((e) => e.model),
    ).toEqual(['qwen2.5-coder:7b']);
    busy.kill('SIGKILL');
    await busy;
  });

  it('a request that reaches the victim with a --keepalive resets it: the waiting load waits that keep-alive out', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const first = run(serve, 'llama3.2', 'a1 @fake:hang');
    await waitForEvent(serve, (e) => e.event === 'request_start', 'the first generation');
    const waiting = run(serve, 'qwen2.5-coder:7b', 'b');
    await waitForEvent(serve, (e) => e.event === 'evict', 'the eviction');
    const late = run(serve, 'llama3.2', 'a2', ['--keepalive', '600ms']);
    const lateId = (await untilRequest(serve, late.pid, 'attached', 'the late request')).id;
    first.kill('SIGINT');
    await Promise.all([first, late, waiting]);
    const events = serve.events();
    const unload = events[at(events, 'unload')]!;
    expect(unload.reason).toBe('expired');
    expect(unload.t - events[at(events, 'request_done', { id: lateId })]!.t).toBeGreaterThanOrEqual(550);
    expect(at(events, 'load_start', { model: 'qwen2.5-coder:7b' })).toBeGreaterThan(at(events, 'unload'));
  });
});

describe('keep-alive', () => {
  it("OLLAMA_KEEP_ALIVE unloads an idle model when it runs out; a request's --keepalive replaces it; 0 unloads at once", async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50', OLLAMA_KEEP_ALIVE: '300ms' });
    await run(serve, 'llama3.2', 'hi');
    const expired = await waitForEvent(serve, (e) => e.event === 'unload' && e.reason === 'expired', 'the keep-alive to run out');
    expect(expired.model).toBe('llama3.2:latest');
    expect(expired.t - serve.events()[at(serve.events(), 'request_done')]!.t).toBeGreaterThanOrEqual(250);

    await run(serve, 'llama3.2', 'hi', ['--keepalive', '0']);
    await waitForEvent(serve, (e) => e.event === 'unload' && e.reason === 'keep_alive_zero', 'the unload');
    const events = serve.events();
    expect(events.findLastIndex((e) => e.event === 'unload')).toBeGreaterThan(
      events.findLastIndex((e) => e.event === 'request_done'),
    );

    await run(serve, 'llama3.2', 'hi', ['--keepalive', '-1m']);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(serve.events().filter((e) => e.event === 'unload')).toHaveLength(2); // forever: still loaded
  });
});

describe('loads', () => {
  it('a client killed during the load aborts it; the next run loads from zero', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '800' });
    const killed = run(serve, 'llama3.2', 'a');
    await waitForEvent(serve, (e) => e.event === 'load_start', 'the load');
    killed.kill('SIGTERM');
    expect((await killed).signal).toBe('SIGTERM');
    await waitForEvent(serve, (e) => e.event === 'load_aborted', 'the aborted load');
    expect(serve.events().find((e) => e.event === 'request_cancelled')?.stage).toBe('loading');
    await waitFor(
      () => serve.log().includes('client connection closed before server finished loading, aborting load'),
      'the log line',
    );
    expect(serve.loads()).toBe(0);

    const next = await run(serve, 'llama3.2', 'b', ['--verbose']);
    expect(next.exitCode).toBe(0);
    expect(steps(serve.events(), ['load_start', 'load_aborted', 'load_done'])).toEqual([
      'load_start:llama3.2:latest',
      'load_aborted:llama3.2:latest',
      'load_start:llama3.2:latest',
      'load_done:llama3.2:latest',
    ]);
    expect(serve.events().find((e) => e.event === 'load_done')!.ms).toBeGreaterThanOrEqual(750);
  });

  it('a load longer than OLLAMA_LOAD_TIMEOUT fails the request with the 500 of its version', async () => {
    const old = await useServe({ FAKE_OLLAMA_LOAD_MS: '600', OLLAMA_LOAD_TIMEOUT: '200ms' });
    const r = await run(old, 'llama3.2', 'hi');
    expect(r.exitCode).toBe(1);
    expect(errorText(r.stderr)).toBe(
      'Error: 500 Internal Server Error: timed out waiting for llama runner to start - progress 0.00 - ',
    );
    expect(old.events().find((e) => e.event === 'load_failed')?.model).toBe('llama3.2:latest');
    expect(old.loads()).toBe(0);

    const recent = await useServe({ FAKE_OLLAMA_LOAD_MS: '600', OLLAMA_LOAD_TIMEOUT: '200ms', FAKE_OLLAMA_VERSION: '0.31.0' });
    expect(errorText((await run(recent, 'llama3.2', 'hi')).stderr)).toBe(
      'Error: 500 Internal Server Error: timed out waiting for llama-server to start - ',
    );
  });

  it('other runner options for the same model (a Modelfile num_ctx) force a reload; the same ones do not', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    await run(serve, 'llama3.2', 'hi');
    await run(serve, 'llama3.2', 'hi', [], { FAKE_OLLAMA_NUM_CTX: 'llama3.2=8192' });
    await run(serve, 'llama3.2', 'hi', [], { FAKE_OLLAMA_NUM_CTX: 'llama3.2=8192' });
    expect(serve.loads()).toBe(2);
    expect(
      serve
        .events()
        .filter((e) => e.event === 'unload')
        .map((e) => e.reason),
    ).toEqual(['reload']);
  });
});

describe('a client that goes away', () => {
  it('cancels its generation and frees the slot for the next request', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const stuck = run(serve, 'llama3.2', 'x @fake:hang');
    const stuckId = (await untilRequest(serve, stuck.pid, 'request_start', 'the generation')).id;
    const next = run(serve, 'llama3.2', 'after');
    const nextId = (await untilRequest(serve, next.pid, 'attached', 'the next request')).id;
    stuck.kill('SIGKILL');
    expect((await next).stdout).toBe('fake answer from llama3.2: after\n\n');
    const events = serve.events();
    expect(events.find((e) => e.event === 'request_cancelled')).toMatchObject({ id: stuckId, stage: 'generating' });
    expect(at(events, 'request_start', { id: nextId })).toBeGreaterThan(at(events, 'request_cancelled', { id: stuckId }));
    expect(at(events, 'request_done', { id: stuckId })).toBe(-1);
  });

  it('waiting in the queue, is skipped when its turn comes', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '5000' });
    const first = run(serve, 'llama3.2', 'a');
    await waitForEvent(serve, (e) => e.event === 'load_start', 'the first load');
    const gone = run(serve, 'qwen2.5-coder:7b', 'b');
    const goneId = (await untilRequest(serve, gone.pid, 'queued', 'the queued request')).id;
    gone.kill('SIGTERM');
    await waitForEvent(serve, (e) => e.event === 'request_cancelled' && e.id === goneId, 'the cancel');
    expect(serve.events().find((e) => e.event === 'request_cancelled')?.stage).toBe('queued');
    first.kill('SIGTERM'); // its load aborts: the queue moves on to the request that went away, and skips it
    await waitForEvent(serve, (e) => e.event === 'load_aborted', 'the aborted load');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(at(serve.events(), 'load_start', { id: goneId })).toBe(-1);
    await Promise.all([first, gone]);
  });
});
