import { readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ProcView } from '../../../src/policy/process-identity.js';
import { SharedSlots } from '../../../src/store/slots/shared-slots.js';
import { SlotAbortedError } from '../../../src/store/slots/slot-aborted-error.js';
import { tempDir } from '../../helpers/temp-dir.js';

const HERE = { host: 'box', boot: 'b1', pidns: 'pid:[1]' };
let root: string;
let alive: Map<number, number>;
const proc: ProcView = {
  startOf: (pid) => alive.get(pid) ?? null,
  exists: (pid) => alive.has(pid),
  cmdlineOf: () => null,
};

/** A SharedSlots as server process `pid` would have it. */
function slotsOf(pid: number, limit = 2, warn: (m: string) => void = () => {}) {
  alive.set(pid, pid * 10);
  return new SharedSlots({
    telemetryDir: root,
    limit,
    identity: { self: { pid, start: pid * 10 }, place: HERE, hasProc: true },
    proc,
    warn,
    random: () => 0.5,
  });
}

beforeEach(() => {
  root = tempDir('slots-');
  alive = new Map();
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(root, { recursive: true, force: true });
});

describe('SharedSlots', () => {
  it('at most `limit` holders across processes; a freed slot goes to a waiter of another process', async () => {
    vi.useFakeTimers();
    const a = slotsOf(100);
    const b = slotsOf(200);
    const releaseA1 = await a.request().granted;
    await a.request().granted;
    const waiting = b.request();
    let got = false;
    void waiting.granted.then(() => (got = true));
    await vi.advanceTimersByTimeAsync(500);
    expect(got).toBe(false);
    expect(b.waiting).toBe(1);
    expect(waiting.position()).toBe(1);
    expect((await b.view()).map((s) => [s.slot, s.pid, s.holder])).toEqual([
      [0, 100, 'alive'],
      [1, 100, 'alive'],
    ]);
    releaseA1();
    await vi.advanceTimersByTimeAsync(150); // the next poll (at most 100 ms, jittered)
    expect(got).toBe(true);
    expect((await b.view()).map((s) => [s.slot, s.pid, s.holder])).toEqual([
      [0, 200, 'this_server'],
      [1, 100, 'alive'],
    ]);
  });

  it("across processes, a freed slot goes to the call that has waited longest, not back to the releasing server's queue", async () => {
    vi.useFakeTimers();
    const a = slotsOf(100, 1);
    const b = slotsOf(200, 1);
    const releaseA = await a.request().granted;
    const order: string[] = [];
    const bWaits = b.request();
    void bWaits.granted.then(() => order.push('b'));
    await vi.advanceTimersByTimeAsync(50);
    const aWaits = a.request(); // later than b's call
    void aWaits.granted.then(() => order.push('a'));
    releaseA(); // a has a call waiting, but b's waited longer
    await vi.advanceTimersByTimeAsync(300);
    expect(order).toEqual(['b']);
    (await bWaits.granted)();
    await vi.advanceTimersByTimeAsync(300);
    expect(order).toEqual(['b', 'a']);
    (await aWaits.granted)();
    expect(readdirSync(path.join(root, 'slots'))).toEqual([]); // no slot, no waiting mark left
  });

  it('within a process, waiters are served in order, and an aborted waiter leaves the line without a slot', async () => {
    const a = slotsOf(100, 1);
    const release = await a.request().granted;
    const order: string[] = [];
    const first = a.request();
    const controller = new AbortController();
    const second = a.request(controller.signal);
    const third = a.request();
    void first.granted.then((r) => (order.push('first'), r));
    void third.granted.then(() => order.push('third'));
    controller.abort();
    await expect(second.granted).rejects.toBeInstanceOf(SlotAbortedError);
    expect(third.position()).toBe(2);
    release();
    (await first.granted)();
    await third.granted;
    expect(order).toEqual(['first', 'third']);
  });

  it("reclaims a dead holder's slot, and says so", async () => {
    const warnings: string[] = [];
    const a = slotsOf(100, 1, (m) => warnings.push(m));
    const dead = JSON.stringify({ pid: 999, start: 5, ...HERE, at: 0 });
    rmSync(path.join(root, 'slots', '0'), { force: true });
    symlinkSync(dead, path.join(root, 'slots', '0'));
    expect(await a.view()).toEqual([{ slot: 0, pid: 999, host: 'box', since: new Date(0).toISOString(), holder: 'dead' }]);
    const release = await a.request().granted;
    expect(warnings).toEqual(['shared concurrency slot 0 was held by server pid 999, which is gone: reclaimed']);
    release();
    expect(readdirSync(path.join(root, 'slots'))).toEqual([]);
  });

  it("never reclaims a live holder's slot, nor one held from another host", async () => {
    vi.useFakeTimers();
    slotsOf(100); // alive
    const a = slotsOf(200, 2);
    symlinkSync(JSON.stringify({ pid: 100, start: 1000, ...HERE, at: 0 }), path.join(root, 'slots', '0'));
    symlinkSync(JSON.stringify({ pid: 999, start: 5, ...HERE, host: 'other', at: 0 }), path.join(root, 'slots', '1'));
    const waiting = a.request();
    let got = false;
    void waiting.granted.then(() => (got = true));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(got).toBe(false);
    expect((await a.view()).map((s) => s.holder)).toEqual(['alive', 'unknown']);
  });

  it('when the slots cannot be made, runs go ahead uncapped and the cause is told once', async () => {
    writeFileSync(path.join(root, 'slots'), 'a file in the way');
    const warnings: string[] = [];
    const a = slotsOf(100, 1, (m) => warnings.push(m));
    await a.request().granted;
    await a.request().granted;
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('runs go ahead without the cap across server processes');
    expect(a.lastError).toContain(path.join(root, 'slots'));
  });
});
