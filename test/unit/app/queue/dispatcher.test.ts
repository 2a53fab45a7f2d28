import { describe, expect, it } from 'vitest';
import { Dispatcher, DispatchAbortedError, type Grant } from '../../../../src/app/queue/dispatcher.js';
import { Residency } from '../../../../src/app/queue/residency.js';
import type { LoadedModelsResult } from '../../../../src/ollama/loaded-models.js';

/** A dispatcher on an injected clock; `ps` is what `ollama ps` answers (null: not asked). */
function setup(
  options: {
    concurrency?: number;
    switchAfterMs?: number;
    capacity?: number | null;
    ps?: () => Promise<LoadedModelsResult>;
    files?: Record<string, number>;
  } = {},
) {
  let now = 0;
  const warnings: string[] = [];
  const clock = () => now;
  let dispatcher!: Dispatcher;
  const residency = new Residency({
    capacity: options.capacity === undefined ? 1 : options.capacity,
    fileBytesOf: (model) => options.files?.[model],
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
  it('holds an attempt for a busy loaded model in its queue and sends it on when the model is free', async () => {
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

  it('serves every queued attempt of the loaded model before it loads another', async () => {
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

  it('switches to an attempt that waited past the bound once the busy model has finished, and looks again by itself', async () => {
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

  it("drops an attempt's keep-alive while attempts for another model wait", async () => {
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

  it('an attempt aborted while it waits leaves the queue at once and never gets a turn', async () => {
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

  it('prefers the model `ollama ps` shows loaded, and learns from sizes which models fit together', async () => {
    const ps = {
      ok: true as const,
      models: ['b:latest', 'c:latest'],
      sizes: new Map([
        ['b:latest', 4e9],
        ['c:latest', 3e8],
      ]),
    };
    const d = setup({ capacity: null, ps: async () => ps, files: { 'a:latest': 1e9 } });
    d.ask('a1', 'a:latest');
    d.ask('a2', 'a:latest');
    d.ask('b1', 'b:latest');
    await d.settle();
    // Attempts wait: the order depends on what is loaded, so `ollama ps` is asked.
    await d.residency.settled();
    await d.settle();
    expect(d.residency.memoryBudget).toBe(4.3e9);
    expect(d.residency.capacity).toBe(2); // for people: the most models seen at once
    // `a` runs (its one slot taken), `b` is loaded and free, and both fit in the 4.3 GB seen: it starts beside `a`.
    expect(d.granted).toEqual(['a1', 'b1']);
    expect(d.grants.get('b1')!.cold).toBe(false);
  });

  it('a guessed fit that ends in a start timeout is excused once, and the model then waits for the busy one', async () => {
    // `ollama ps` showed a (3 GB) beside small (2.8 GB): 5.8 GB. c was never seen loaded; its file is 2.65 GB.
    const ps = {
      ok: true as const,
      models: ['a', 'small'],
      sizes: new Map([
        ['a', 3e9],
        ['small', 2.8e9],
      ]),
    };
    const d = setup({ capacity: null, ps: async () => ps, files: { c: 2.65e9 } });
    d.ask('a1', 'a');
    await d.settle();
    d.grants.get('a1')!.answerBegan(); // a loaded: `ollama ps` shows what fits beside it
    await d.residency.settled();
    d.ask('c1', 'c');
    await d.settle();
    const c1 = d.grants.get('c1')!;
    expect(c1.placement).toBe('guessed');
    expect(c1.startTimedOut()).toContain('guessing that they fit in its memory together');
    c1.release();
    const retry = d.ask('c2', 'c');
    await d.residency.settled();
    await d.settle();
    expect(d.granted).toEqual(['a1', 'c1']);
    expect(retry.ticket.reason()).toMatchObject({ kind: 'load', loaded: ['a'] });
    d.grants.get('a1')!.release();
    await d.settle();
    expect(d.granted).toEqual(['a1', 'c1', 'c2']);
    expect(d.grants.get('c2')!.placement).toBe('alone');
    expect(d.grants.get('c2')!.startTimedOut()).toBeNull(); // sent alone: nothing to excuse
  });

  it('learns that less fits when Ollama unloads models believed loaded to make room for a load', async () => {
    let shown = {
      ok: true as const,
      models: ['a', 'b'],
      sizes: new Map([
        ['a', 4e9],
        ['b', 4e9],
      ]),
    };
    const d = setup({ capacity: null, ps: async () => shown, files: { c: 3.4e9 } });
    d.ask('a1', 'a');
    await d.settle();
    d.grants.get('a1')!.answerBegan();
    await d.residency.settled();
    expect(d.residency.memoryBudget).toBe(8e9); // a and b seen together
    d.grants.get('a1')!.release();
    // Loading c (a 3.4 GB file) while a and b are idle: the server expects Ollama to unload b and keep
    // a beside c (7.4 GB). The memory has shrunk: Ollama unloaded both.
    shown = { ok: true as const, models: ['c'], sizes: new Map([['c', 4e9]]) };
    d.ask('c1', 'c');
    await d.settle();
    d.grants.get('c1')!.answerBegan();
    await d.residency.settled();
    expect(d.residency.memoryBudget).toBe(8e9 - 1);
    expect(d.dispatcher.residency().loaded).toEqual(['c']);
  });

  it('a model of unknown size is never sent beside a busy one', async () => {
    const ps = {
      ok: true as const,
      models: ['a', 'small'],
      sizes: new Map([
        ['a', 3e9],
        ['small', 2.8e9],
      ]),
    };
    const d = setup({ capacity: null, ps: async () => ps });
    d.ask('a1', 'a');
    await d.settle();
    d.grants.get('a1')!.answerBegan();
    await d.residency.settled();
    d.ask('x1', 'x');
    await d.settle();
    expect(d.granted).toEqual(['a1']);
  });

  it('goes on from its own dispatches when `ollama ps` fails, and says so once', async () => {
    const d = setup({
      ps: async () => ({ ok: false, cause: 'timeout', reason: '`ollama ps` did not answer within 3000 ms and was killed' }),
    });
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
