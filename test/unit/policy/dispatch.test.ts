import { describe, expect, it } from 'vitest';
import {
  afterStart,
  attemptsToStart,
  nextSwitchInMs,
  placementOf,
  whyWaiting,
  type DispatchView,
  type QueuedAttempt,
  type Room,
} from '../../../src/policy/dispatch.js';

let ids = 0;
function attempt(modelKey: string, since = 0, over: Partial<QueuedAttempt> = {}): QueuedAttempt {
  ids += 1;
  return { id: ids, modelKey, parallel: 1, since, batch: null, ...over };
}

function view(over: Partial<DispatchView> = {}): DispatchView {
  return {
    now: 0,
    waiting: [],
    running: new Map(),
    batchRunning: new Map(),
    loaded: [],
    lastStarted: new Map(),
    room: { kind: 'count', capacity: 1 },
    concurrency: 8,
    switchAfterMs: 30_000,
    ...over,
  };
}

const models = (attempts: readonly QueuedAttempt[]) => attempts.map((c) => c.modelKey);

/**
 * Run a queue to its end, as the dispatcher would: start what may start, finish the oldest running
 * attempt `answerMs` later (plus `loadMs` when its model was not loaded). Returns the order of starts
 * and how many loads it took.
 */
function simulate(
  waiting: QueuedAttempt[],
  options: { capacity?: number; loadMs?: number; answerMs?: number; switchAfterMs?: number; loaded?: string[] } = {},
) {
  const { loadMs = 600, answerMs = 100 } = options;
  let v = view({
    waiting,
    room: { kind: 'count', capacity: options.capacity ?? 1 },
    switchAfterMs: options.switchAfterMs ?? 30_000,
    loaded: options.loaded ?? [],
  });
  const running: { attempt: QueuedAttempt; endsAt: number }[] = [];
  const order: string[] = [];
  let loads = 0;
  for (let guard = 0; guard < 1000 && (v.waiting.length > 0 || running.length > 0); guard += 1) {
    for (const next of attemptsToStart(v)) {
      const cold = !v.loaded.includes(next.modelKey);
      if (cold) loads += 1;
      // An attempt for a model already loading waits for the same load.
      const loading = running.find((r) => r.attempt.modelKey === next.modelKey);
      const readyAt = cold ? v.now + loadMs : loading ? Math.max(v.now, loading.endsAt - answerMs) : v.now;
      running.push({ attempt: next, endsAt: readyAt + answerMs });
      order.push(next.modelKey);
      v = afterStart(v, next);
    }
    running.sort((a, b) => a.endsAt - b.endsAt);
    const done = running.shift();
    if (done === undefined) break;
    const left = (v.running.get(done.attempt.modelKey) ?? 1) - 1;
    const counts = new Map(v.running);
    if (left === 0) counts.delete(done.attempt.modelKey);
    else counts.set(done.attempt.modelKey, left);
    v = { ...v, now: done.endsAt, running: counts };
  }
  return { order, loads, wall: v.now };
}

describe('dispatch order', () => {
  it('sends a model no more attempts at once than Ollama runs for it (parallel), the rest wait', () => {
    const a = [attempt('a'), attempt('a'), attempt('a')];
    expect(models(attemptsToStart(view({ waiting: a })))).toEqual(['a']);
    expect(models(attemptsToStart(view({ waiting: a.map((c) => ({ ...c, parallel: 2 })) })))).toEqual(['a', 'a']);
  });

  it('runs two models side by side only when they fit together', () => {
    const waiting = [attempt('a'), attempt('b')];
    expect(models(attemptsToStart(view({ waiting, room: { kind: 'count', capacity: 1 } })))).toEqual(['a']);
    expect(models(attemptsToStart(view({ waiting, room: { kind: 'count', capacity: 2 } })))).toEqual(['a', 'b']);
  });

  it('serves the loaded model first, then switches once its queue is empty: 12 alternating attempts take 2 loads', () => {
    const waiting = Array.from({ length: 12 }, (_, i) => attempt(i % 2 === 0 ? 'a' : 'b', i));
    const { order, loads, wall } = simulate(waiting);
    expect(order).toEqual([...Array(6).fill('a'), ...Array(6).fill('b')]);
    expect(loads).toBe(2);
    expect(wall).toBe(2 * 600 + 12 * 100);
  });

  it('prefers attempts for a model Ollama already has loaded, even when they came later', () => {
    const waiting = [attempt('b', 0), attempt('a', 1)];
    expect(models(attemptsToStart(view({ waiting, loaded: ['a'] })))).toEqual(['a']);
  });

  it('replaces an idle loaded model rather than making an attempt wait', () => {
    expect(models(attemptsToStart(view({ waiting: [attempt('b')], loaded: ['a'] })))).toEqual(['b']);
    const after = afterStart(view({ waiting: [], loaded: ['a'] }), attempt('b'));
    expect(after.loaded).toEqual(['b']);
  });

  it('never sends an attempt that would make Ollama wait for a busy model: it waits here', () => {
    const busy = view({ waiting: [attempt('b', 0)], loaded: ['a'], running: new Map([['a', 1]]), now: 1_000 });
    expect(attemptsToStart(busy)).toEqual([]);
    expect(whyWaiting(busy, busy.waiting[0]!)).toEqual({ kind: 'load', loaded: ['a'], switchInMs: 29_000 });
  });

  it('switches to an attempt that has waited past the bound: the busy model gets no new attempts, then gives way', () => {
    const b = attempt('b', 0);
    const a = attempt('a', 100);
    const lastStarted = new Map([['a', 100]]);
    // Before the bound, the loaded model keeps its traffic.
    const early = view({ waiting: [b, a], loaded: ['a'], running: new Map([['a', 1]]), now: 29_999, lastStarted });
    expect(nextSwitchInMs(early)).toBe(1);
    // At the bound, `a` gets nothing more while it runs...
    const due = { ...early, now: 30_000, running: new Map([['a', 0]]), waiting: [b, a] };
    const busyDue = { ...due, running: new Map([['a', 1]]) };
    expect(attemptsToStart(busyDue)).toEqual([]);
    expect(whyWaiting(busyDue, a)).toEqual({ kind: 'unloading', for: 'b' });
    expect(whyWaiting(busyDue, b)).toEqual({ kind: 'load', loaded: ['a'], switchInMs: 0 });
    // ...and once it is idle, `b` goes first although `a` is loaded.
    expect(models(attemptsToStart({ ...due, running: new Map() }))).toEqual(['b']);
  });

  it('bounds how long steady traffic for a loaded model holds another off', () => {
    // `a` is loaded and has an attempt waiting at every moment; one attempt for `b` arrives at 0.
    const waiting = [attempt('b', 0), ...Array.from({ length: 400 }, (_, i) => attempt('a', i))];
    const { order } = simulate(waiting, { switchAfterMs: 5_000, loaded: ['a'] });
    // `a` answers one attempt per 100 ms: 50 attempts fit in the 5 s bound, then `b` goes.
    expect(order.indexOf('b')).toBe(50);
    expect(order.slice(51)).toEqual(Array(order.length - 51).fill('a'));
  });

  it('gives each model a turn of the bound when both have steady traffic, not one attempt each', () => {
    const waiting = Array.from({ length: 200 }, (_, i) => attempt(i % 2 === 0 ? 'a' : 'b', i));
    const { order, loads } = simulate(waiting, { switchAfterMs: 2_000 });
    // Each turn is 2 s: one 0.6 s load and 14 answers of 0.1 s.
    const turns = order
      .join('')
      .match(/a+|b+/g)!
      .map((run) => run.length);
    expect(loads).toBe(turns.length);
    expect(turns.slice(0, -2).every((n) => n >= 13)).toBe(true);
    expect(loads).toBeLessThanOrEqual(16);
  });

  it("keeps a batch's jobs within the batch's own limit", () => {
    const batch = { id: 'x', limit: 2 };
    const waiting = [0, 1, 2].map(() => attempt('a', 0, { parallel: 4, batch }));
    expect(attemptsToStart(view({ waiting }))).toHaveLength(2);
    const full = view({ waiting, batchRunning: new Map([['x', 2]]) });
    expect(whyWaiting(full, waiting[0]!)).toEqual({ kind: 'batch' });
  });

  it("keeps the server's own cap over every model", () => {
    const waiting = [attempt('a', 0, { parallel: 8 }), attempt('a', 0, { parallel: 8 }), attempt('a', 0, { parallel: 8 })];
    const v = view({ waiting, concurrency: 2 });
    expect(attemptsToStart(v)).toHaveLength(2);
    const full = view({ waiting, concurrency: 2, running: new Map([['a', 2]]) });
    // Its model could take more: the server's own cap is what holds it.
    expect(whyWaiting(full, waiting[2]!)).toEqual({ kind: 'concurrency', ahead: 2 });
  });

  it('says how many attempts of its own model an attempt waits behind', () => {
    const waiting = [attempt('a'), attempt('b'), attempt('a')];
    const v = view({ waiting, loaded: ['a'], running: new Map([['a', 1]]) });
    expect(whyWaiting(v, waiting[2]!)).toEqual({ kind: 'parallel', running: 1, ahead: 1 });
  });
});

const GB = 1e9;

/** A room learned from sizes: `budget` GB seen held together; sizes in GB, `seen` in `ollama ps` or `atLeast` (a file). */
function memory(budget: number, seen: Record<string, number>, atLeast: Record<string, number> = {}): Room {
  return {
    kind: 'memory',
    memory: {
      budget: budget * GB,
      sizeOf: (model) =>
        seen[model] !== undefined
          ? { bytes: seen[model] * GB, kind: 'seen' }
          : atLeast[model] !== undefined
            ? { bytes: atLeast[model] * GB, kind: 'at_least' }
            : undefined,
    },
  };
}

describe('dispatch order by the memory learned from sizes', () => {
  it('sends a model beside a busy one only when their sizes fit in the memory seen holding models together', () => {
    // `ollama ps` once showed an LLM (4.9 GB) beside a RAG app's small embedding model (0.3 GB).
    const room = memory(5.2, { a: 4.9, embed: 0.3, b: 4.9 });
    const busy = { loaded: ['a'], running: new Map([['a', 1]]), room };
    const big = view({ ...busy, waiting: [attempt('b')], now: 1_000 });
    expect(attemptsToStart(big)).toEqual([]);
    expect(whyWaiting(big, big.waiting[0]!)).toEqual({ kind: 'load', loaded: ['a'], switchInMs: 29_000 });
    const small = view({ ...busy, waiting: [attempt('embed')] });
    expect(models(attemptsToStart(small))).toEqual(['embed']);
    expect(placementOf(small, 'embed')).toBe('known');
  });

  it("counts a model never seen loaded at its file's size, as a guess, and one of unknown size as fitting nowhere", () => {
    const room = memory(8, { a: 4 }, { c: 3.5 });
    const busy = { loaded: ['a'], running: new Map([['a', 1]]), room };
    const guessed = view({ ...busy, waiting: [attempt('c')] });
    expect(models(attemptsToStart(guessed))).toEqual(['c']);
    expect(placementOf(guessed, 'c')).toBe('guessed');
    expect(attemptsToStart(view({ ...busy, waiting: [attempt('unknown')] }))).toEqual([]);
  });

  it('loads a model alone when nothing is busy, giving up the idle models that no longer fit beside it', () => {
    const idle = { waiting: [attempt('b')], loaded: ['x', 'y'] };
    const tight = view({ ...idle, room: memory(6, { x: 3, y: 2.5, b: 4 }) });
    expect(placementOf(tight, 'b')).toBe('alone');
    expect(afterStart(tight, tight.waiting[0]!).loaded).toEqual(['b']);
    const roomy = view({ ...idle, room: memory(8, { x: 3, y: 2.5, b: 4 }) });
    expect(afterStart(roomy, roomy.waiting[0]!).loaded).toEqual(['y', 'b']);
    // Nothing learned yet: one model at a time.
    expect(afterStart(view({ ...idle, room: memory(0, {}) }), idle.waiting[0]!).loaded).toEqual(['b']);
  });

  it('a model already loaded is placed as loaded, and a count the user set is known to fit', () => {
    expect(placementOf(view({ loaded: ['a'], room: memory(0, {}) }), 'a')).toBe('loaded');
    const counted = view({ loaded: ['a'], running: new Map([['a', 1]]), room: { kind: 'count', capacity: 2 } });
    expect(placementOf(counted, 'b')).toBe('known');
  });
});
