import { describe, expect, it } from 'vitest';
import { Dispatcher, DispatchAbortedError, type Grant } from '../../../src/app/dispatcher.js';
import { Residency } from '../../../src/app/residency.js';
import type { LoadedModelsResult } from '../../../src/ollama/loaded-models.js';

/** A dispatcher on an injected clock; `ps` is what `ollama ps` answers (null: not asked). */
function setup(
  options: {
    concurrency?: number;
    switchAfterMs?: number;
    capacity?: number | null;
    ps?: () => Promise<LoadedModelsResult>;
  } = {},
) {
  let now = 0;
  const warnings: string[] = [];
  const clock = () => now;
  let dispatcher!: Dispatcher;
  const residency = new Residency({
    capacity: options.capacity === undefined ? 1 : options.capacity,
    keepAliveMs: 300_000,
    clock,
    readLoaded: options.ps ?? null,
    warn: (m) => warnings.push(m),
    onChange: () => dispatcher.look(),
  });
  dispatcher = new Dispatcher({
    concurrency: options.concurrency ?? 4,
    switchAfterMs: options.switchAfterMs ?? 30_000,
    residency,
    clock,
  });
  const granted: string[] = [];
  const grants = new Map<string, Grant>();
  const ask = (name: string, model: string, extra: { keepAliveMs?: number; signal?: AbortSignal } = {}) => {
    const ticket = dispatcher.request(
      { modelKey: model, parallel: 1, ...(extra.keepAliveMs !== undefined ? { keepAliveMs: extra.keepAliveMs } : {}) },
      extra.signal,
    );
    const done = ticket.granted.then((grant) => {
      granted.push(name);
      grants.set(name, grant);
      return grant;
    });
    return { ticket, done };
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { dispatcher, residency, ask, granted, grants, settle, warnings, advance: (ms: number) => void (now += ms) };
}

describe('Dispatcher', () => {
  it('holds a call for a busy loaded model in its queue and sends it on when the model is free', async () => {
    const d = setup();
    d.ask('a1', 'a');
    const second = d.ask('a2', 'a');
    await d.settle();
    expect(d.granted).toEqual(['a1']);
    expect(second.ticket.reason()).toEqual({ kind: 'parallel', running: 1, ahead: 0 });
    d.grants.get('a1')!.release();
    await d.settle();
    expect(d.granted).toEqual(['a1', 'a2']);
    expect(second.ticket.reason()).toBeNull();
  });

  it('serves every queued call of the loaded model before it loads another', async () => {
    const d = setup();
    d.ask('a1', 'a');
    d.ask('b1', 'b');
    d.ask('a2', 'a');
    d.ask('b2', 'b');
    for (let i = 0; i < 4; i += 1) {
      await d.settle();
      d.grants.get(d.granted.at(-1)!)!.release();
    }
    await d.settle();
    expect(d.granted).toEqual(['a1', 'a2', 'b1', 'b2']);
    expect(['a1', 'a2', 'b1', 'b2'].map((n) => d.grants.get(n)!.cold)).toEqual([true, false, true, false]);
  });

  it('switches to a call that waited past the bound once the busy model has finished, and looks again by itself', async () => {
    const d = setup({ switchAfterMs: 1_000 });
    d.ask('a1', 'a');
    const b = d.ask('b1', 'b');
    d.ask('a2', 'a');
    await d.settle();
    d.advance(1_000);
    d.dispatcher.look();
    expect(b.ticket.reason()).toEqual({ kind: 'load', loaded: ['a'], switchInMs: 0 });
    d.grants.get('a1')!.release();
    await d.settle();
    // `b` goes before `a2`, although `a` is loaded.
    expect(d.granted).toEqual(['a1', 'b1']);
  });

  it("drops a call's keep-alive while calls for another model wait", async () => {
    const d = setup();
    d.ask('a1', 'a', { keepAliveMs: 3_600_000 });
    await d.settle();
    expect(d.grants.get('a1')!.sendKeepAlive).toBe(true);
    d.ask('b1', 'b');
    d.ask('a2', 'a', { keepAliveMs: 3_600_000 });
    d.grants.get('a1')!.release();
    await d.settle();
    expect(d.granted).toEqual(['a1', 'a2']);
    expect(d.grants.get('a2')!.sendKeepAlive).toBe(false);
  });

  it('a call aborted while it waits leaves the queue at once and never gets a turn', async () => {
    const d = setup();
    d.ask('a1', 'a');
    const controller = new AbortController();
    const waiting = d.ask('a2', 'a', { signal: controller.signal });
    controller.abort();
    await expect(waiting.done).rejects.toBeInstanceOf(DispatchAbortedError);
    expect(d.dispatcher.waiting).toBe(0);
    d.grants.get('a1')!.release();
    await d.settle();
    expect(d.granted).toEqual(['a1']);
  });

  it('prefers the model `ollama ps` shows loaded, and learns how many models fit', async () => {
    const d = setup({ capacity: null, ps: async () => ({ ok: true, models: ['b:latest', 'c:latest'] }) });
    d.ask('a1', 'a:latest');
    d.ask('a2', 'a:latest');
    d.ask('b1', 'b:latest');
    await d.settle();
    // Calls wait: the order depends on what is loaded, so `ollama ps` is asked.
    await d.residency.settled();
    await d.settle();
    expect(d.residency.capacity).toBe(2);
    // `a` runs (its one slot taken), `b` is loaded and free: it starts beside `a`.
    expect(d.granted).toEqual(['a1', 'b1']);
    expect(d.grants.get('b1')!.cold).toBe(false);
  });

  it('goes on from its own dispatches when `ollama ps` fails, and says so once', async () => {
    const d = setup({ ps: async () => ({ ok: false, reason: '`ollama ps` did not answer within 3000 ms and was killed' }) });
    d.ask('a1', 'a');
    d.ask('b1', 'b');
    d.ask('b2', 'b');
    await d.residency.settled();
    d.advance(10_000);
    d.grants.get('a1')!.release();
    await d.settle();
    await d.residency.settled();
    d.grants.get('b1')!.release();
    await d.settle();
    expect(d.granted).toEqual(['a1', 'b1', 'b2']);
    expect(d.warnings).toHaveLength(1);
    expect(d.warnings[0]).toContain('cannot read which models Ollama has loaded (`ollama ps` did not answer');
  });

  it('forgets a loaded model once its keep-alive has run out', async () => {
    const d = setup();
    d.ask('a1', 'a', { keepAliveMs: 1_000 });
    await d.settle();
    d.grants.get('a1')!.release();
    expect(d.dispatcher.residency().loaded).toEqual(['a']);
    d.advance(1_001);
    expect(d.dispatcher.residency().loaded).toEqual([]);
  });
});
