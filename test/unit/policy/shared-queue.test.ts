import { describe, expect, it } from 'vitest';
import {
  addRunning,
  addWaiting,
  afterClockStep,
  decide,
  dropGoneServers,
  dropIdleServer,
  EMPTY_QUEUE,
  FOREVER,
  nextDecisionInMs,
  observePs,
  removeEntry,
  touchServer,
  whyEntryWaits,
  type DecideContext,
  type QueueEntry,
  type SharedQueue,
} from '../../../src/policy/shared-queue.js';

const place = { host: 'box', boot: 'b1', pidns: null };
const ctx = (now: number, over: Partial<DecideContext> = {}): DecideContext => ({
  now,
  room: { kind: 'count', capacity: 1 },
  switchAfterMs: 30_000,
  defaultKeepAliveMs: 300_000,
  ...over,
});

/** A queue with servers A and B (concurrency 3 each unless said), seen at `now`. */
function withServers(now = 0, concurrency: Record<string, number> = {}): SharedQueue {
  let queue = EMPTY_QUEUE;
  for (const [key, pid] of [
    ['A', 100],
    ['B', 200],
    ['C', 300],
  ] as const) {
    queue = touchServer(queue, key, { pid, start: pid, ...place, concurrency: concurrency[key] ?? 3 }, now);
  }
  return queue;
}

let n = 0;
function entry(server: string, model: string, since: number, over: Partial<QueueEntry> = {}): QueueEntry {
  n += 1;
  return { id: `${server}#${n}`, server, model, parallel: 1, since, batch: null, ...over };
}

const join = (queue: SharedQueue, ...entries: QueueEntry[]) => entries.reduce(addWaiting, queue);
const grantedIds = (queue: SharedQueue, now: number, over: Partial<DecideContext> = {}) =>
  decide(queue, ctx(now, over)).granted.map((e) => e.id);

/**
 * Play the queue to its end as the servers would: decide, finish the oldest running attempt after
 * `answerMs` (plus `loadMs` when its grant was cold), decide again. Returns the model order of the
 * grants and how many loads that took.
 */
function play(queue: SharedQueue, loadMs = 600, answerMs = 100, over: Partial<DecideContext> = {}) {
  let now = 0;
  const order: string[] = [];
  let loads = 0;
  const ends = new Map<string, number>();
  for (let step = 0; step < 1_000; step += 1) {
    const decided = decide(queue, ctx(now, over));
    queue = decided.queue;
    for (const g of decided.granted) {
      order.push(`${g.server}:${g.model}`);
      const cold = g.terms.placement !== 'loaded';
      if (cold) loads += 1;
      ends.set(g.id, now + answerMs + (cold ? loadMs : 0));
    }
    if (queue.running.length === 0 && queue.waiting.length === 0) break;
    const next = [...ends].sort((a, b) => a[1] - b[1])[0];
    if (next === undefined) {
      now += 1_000;
      continue;
    }
    now = next[1];
    ends.delete(next[0]);
    queue = removeEntry(queue, next[0], now);
  }
  return { order, loads, queue };
}

describe('the queue every server of one Ollama shares', () => {
  it('two servers each sending their own model: the union decides, so the loaded model goes first and each model loads once', () => {
    // A and B each sent three calls of their own model, interleaved in time: per server, each would load at once.
    let queue = withServers();
    for (let i = 0; i < 3; i += 1) queue = join(queue, entry('A', 'a', i * 2), entry('B', 'b', i * 2 + 1));
    const { order, loads } = play(queue);
    expect(loads).toBe(2);
    expect(order).toEqual(['A:a', 'A:a', 'A:a', 'B:b', 'B:b', 'B:b']);
  });

  it('grants one server only as many calls as its own OLLAMA_MCP_CONCURRENCY, leaving the rest to others', () => {
    let queue = withServers(0, { A: 1 });
    queue = join(
      queue,
      entry('A', 'a', 0, { parallel: 4 }),
      entry('A', 'a', 1, { parallel: 4 }),
      entry('B', 'a', 2, { parallel: 4 }),
    );
    const granted = decide(queue, ctx(10)).granted;
    expect(granted.map((g) => g.server)).toEqual(['A', 'B']);
    const why = whyEntryWaits(decide(queue, ctx(10)).queue, queue.waiting[1]!.id, ctx(10));
    expect(why?.reason).toEqual({ kind: 'concurrency', ahead: 0 });
  });

  it("keeps the fairness bound across servers: B's call for another model goes next once it waited switchAfterMs, despite A's steady traffic", () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0));
    queue = decide(queue, ctx(0)).queue; // a loaded and running
    const bCall = entry('B', 'b', 100);
    queue = join(queue, bCall);
    // A keeps sending calls of a, each answered in 500 ms.
    let now = 0;
    let served = false;
    for (let i = 1; i < 200 && !served; i += 1) {
      queue = join(queue, entry('A', 'a', now + 1));
      now += 500;
      const running = queue.running.find((e) => e.model === 'a');
      if (running) queue = removeEntry(queue, running.id, now);
      const decided = decide(queue, ctx(now, { switchAfterMs: 5_000 }));
      queue = decided.queue;
      served = decided.granted.some((g) => g.id === bCall.id);
    }
    expect(served).toBe(true);
    // Within the bound: 5 s of waiting, plus the one call running on a (500 ms).
    expect(now - bCall.since).toBeLessThanOrEqual(5_000 + 500);
  });

  it('says which other servers a call waits behind, by model', () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0), entry('A', 'a', 1), entry('A', 'a', 2));
    queue = decide(queue, ctx(3)).queue;
    const mine = entry('B', 'b', 4);
    queue = join(queue, mine);
    const why = whyEntryWaits(queue, mine.id, ctx(5));
    expect(why?.reason.kind).toBe('load');
    expect(why?.elsewhere).toEqual({ calls: 3, model: 'a' });
    // A's own calls behind its own model's running one wait for a slot, not behind "another session".
    const own = whyEntryWaits(queue, queue.waiting.find((e) => e.server === 'A')!.id, ctx(5));
    expect(own?.reason.kind).toBe('parallel');
    expect(own?.elsewhere).toBeNull();
  });

  it('drops a server found dead, or silent past its lease, with its calls; the rest go on', () => {
    let queue = withServers(0);
    queue = join(queue, entry('A', 'a', 0), entry('B', 'b', 1), entry('C', 'c', 2));
    queue = decide(queue, ctx(3)).queue; // A's a runs, holding the one place
    expect(grantedIds(queue, 4)).toEqual([]);
    queue = touchServer(queue, 'B', { ...queue.servers.B! }, 9_000);
    queue = touchServer(queue, 'C', { ...queue.servers.C! }, 9_000);
    // A is dead (the judge says so) at 9 s: dropped at once, and B's call goes on.
    const dead = dropGoneServers(queue, 9_000, 10_000, (key) => (key === 'A' ? 'gone' : 'here'));
    expect(dead.gone).toEqual(['A']);
    expect(dead.queue.running).toEqual([]);
    expect(decide(dead.queue, ctx(9_000)).granted.map((g) => g.server)).toEqual(['B']);
    // Silent: at 19.5 s B and C were last seen 10.5 s ago.
    const silent = dropGoneServers(dead.queue, 19_500, 10_000, () => 'here');
    expect(silent.gone.sort()).toEqual(['B', 'C']);
    expect(silent.queue.waiting).toEqual([]);
  });

  it('a server with nothing in the queue leaves it; one with calls stays', () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0));
    expect(Object.keys(dropIdleServer(dropIdleServer(queue, 'A'), 'B').servers).sort()).toEqual(['A', 'C']);
  });

  it('a clock stepped back moves every time by the step: the order and the waits so far are kept, no server expires', () => {
    let queue = withServers(50_000);
    const first = entry('B', 'b', 50_100);
    const second = entry('A', 'b', 50_200);
    queue = join(queue, first, second);
    queue = { ...queue, lastStarted: { a: 50_050 } };
    const stepped = afterClockStep(queue, 1_000); // an hour... or 49 s back: the latest time becomes now
    expect(stepped.waiting.map((e) => e.since)).toEqual([900, 1_000]);
    expect(stepped.lastStarted.a).toBe(850);
    expect(dropGoneServers(stepped, 1_000, 10_000, () => 'here').gone).toEqual([]);
    expect(decide(stepped, ctx(1_000)).granted.map((g) => g.id)).toEqual([first.id]);
    expect(afterClockStep(queue, 60_000)).toBe(queue); // forward: nothing to undo
  });

  it("what `ollama ps` shows is what is loaded: models it does not show are gone, another client's count as least recently used", () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0));
    queue = decide(queue, ctx(0)).queue;
    queue = removeEntry(queue, queue.running[0]!.id, 10);
    queue = observePs(queue, { askedAt: 20, models: ['x'], sizes: { x: 5 } }, { now: 30, defaultKeepAliveMs: FOREVER });
    expect(queue.loaded.map((m) => m.model)).toEqual(['x']);
    expect(queue.ps.last?.models).toEqual(['x']);
    expect(queue.ps.asking).toBeNull();
  });

  it("an idle model past its keep-alive is not loaded; the call's keep-alive is kept only while no other model waits", () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0, { keepAliveMs: 1_000 }));
    queue = decide(queue, ctx(0)).queue;
    expect(queue.loaded[0]).toMatchObject({ model: 'a', keepAliveMs: 1_000 });
    queue = removeEntry(queue, queue.running[0]!.id, 100);
    queue = join(queue, entry('B', 'a', 2_000));
    expect(decide(queue, ctx(2_000)).granted[0]?.terms.placement).toBe('alone'); // unloaded by then
    // With another model waiting, a long keep-alive is not sent.
    let busy = join(withServers(), entry('A', 'a', 0, { keepAliveMs: 3_600_000 }), entry('B', 'b', 1));
    busy = decide(busy, ctx(2)).queue;
    expect(busy.running[0]?.terms.sendKeepAlive).toBe(false);
    expect(busy.loaded[0]?.keepAliveMs).toBe(300_000);
  });

  it('the next decision is due when a waiting call becomes overdue', () => {
    let queue = withServers();
    queue = join(queue, entry('A', 'a', 0));
    queue = decide(queue, ctx(0)).queue;
    queue = join(queue, entry('B', 'b', 1_000));
    expect(nextDecisionInMs(queue, ctx(2_000, { switchAfterMs: 5_000 }))).toBe(4_000);
  });

  it('a running call missing from the queue comes back once, and leaves the waiting list', () => {
    let queue = join(withServers(), entry('A', 'a', 0));
    const granted = decide(queue, ctx(1)).granted[0]!;
    queue = { ...queue, running: [] };
    const back = addRunning(addRunning(queue, granted), granted);
    expect(back.running.map((e) => e.id)).toEqual([granted.id]);
    expect(back.waiting).toEqual([]);
  });
});

describe('the order of calls that joined at once', () => {
  it('is the order they joined, not the order of their ids (a batch of 12 joins in one write)', () => {
    let queue = withServers(0, { A: 2 });
    const jobs = Array.from({ length: 12 }, (_, i) => ({ ...entry('A', 'a', 5, { parallel: 8 }), id: `A#${i + 1}` }));
    queue = join(queue, ...jobs);
    expect(decide(queue, ctx(5)).granted.map((g) => g.id)).toEqual(['A#1', 'A#2']);
  });
});
