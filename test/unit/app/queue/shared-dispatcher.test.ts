import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dispatcher, type DispatchQueue, type Grant } from '../../../../src/app/queue/dispatcher.js';
import { Residency } from '../../../../src/app/queue/residency.js';
import { SharedDispatcher } from '../../../../src/app/queue/shared-dispatcher.js';
import type { ProcView } from '../../../../src/policy/process-identity.js';
import type { SelfIdentity } from '../../../../src/store/processes/proc-reader.js';
import { FileQueueStore } from '../../../../src/store/queue/file-queue-store.js';
import { ollamaKeyOf } from '../../../../src/store/queue/queue-store.js';

const dirs: string[] = [];
const dispatchers: SharedDispatcher[] = [];
afterEach(async () => {
  for (const d of dispatchers.splice(0)) await d.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
});

/** Processes in this test's world: a pid is alive while it is in the set (start time = pid). */
const alive = new Set<number>();
const proc: ProcView = {
  startOf: (pid) => (alive.has(pid) ? pid : null),
  exists: (pid) => alive.has(pid),
  cmdlineOf: () => null,
};

const identity = (pid: number): SelfIdentity => ({
  self: { pid, start: pid },
  place: { host: 'box', boot: 'boot-1', pidns: 'pid:[1]' },
  hasProc: true,
});

function server(telemetryDir: string, pid: number, warnings: string[] = []): SharedDispatcher {
  alive.add(pid);
  const warn = (m: string) => warnings.push(m);
  const residency = new Residency({
    capacity: 1,
    fileBytesOf: () => undefined,
    keepAliveMs: 300_000,
    clock: () => performance.now(),
    readLoaded: null,
    warn,
    onChange: () => {},
  });
  const local = new Dispatcher({ concurrency: 3, switchAfterMs: 30_000, residency, clock: () => performance.now() });
  const store = new FileQueueStore({ telemetryDir, ollamaKey: ollamaKeyOf(undefined), identity: identity(pid), proc });
  const dispatcher = new SharedDispatcher({
    ...{ store, local, residency, concurrency: 3, switchAfterMs: 30_000, keepAliveMs: 300_000 },
    ...{ identity: identity(pid), warn },
  });
  dispatchers.push(dispatcher);
  return dispatcher;
}

function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'shared-dispatcher-'));
  dirs.push(dir);
  return dir;
}

const ask = (d: DispatchQueue, model: string, signal?: AbortSignal) => d.request({ modelKey: model, parallel: 1 }, signal);

/** Whether `promise` has settled after the event loop had `ms` to run. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return done;
}

describe('the shared queue between servers of one data dir', () => {
  it("holds B's call for another model while A's runs (one model fits), says so, and grants it once A's ends", async () => {
    const dir = dataDir();
    const a = server(dir, 1001);
    const b = server(dir, 1002);
    const grantA: Grant = await ask(a, 'sim-a').granted;
    expect(grantA.cold).toBe(true);
    const ticketB = ask(b, 'sim-b');
    expect(await settledWithin(ticketB.granted, 300)).toBe(false);
    expect(ticketB.reason()).toMatchObject({ kind: 'load', loaded: ['sim-a'], elsewhere: { calls: 1, model: 'sim-a' } });
    expect(await b.shared()).toMatchObject({ otherServers: 1, runningElsewhere: 1, waitingElsewhere: 0, error: null });
    grantA.release();
    const grantB = await ticketB.granted;
    expect(grantB.placement).toBe('alone');
    grantB.release();
  });

  it('a second call of the loaded model, from another server, goes before a call that needs a load', async () => {
    const dir = dataDir();
    const a = server(dir, 1011);
    const b = server(dir, 1012);
    const first = await ask(a, 'sim-a').granted;
    const other = ask(a, 'sim-b');
    await vi.waitFor(() => expect(other.reason()).not.toBeNull());
    const same = ask(b, 'sim-a');
    await vi.waitFor(() => expect(same.reason()).not.toBeNull()); // both wait in the queue
    first.release();
    const grant = await same.granted;
    expect(grant.placement).toBe('loaded');
    expect(await settledWithin(other.granted, 200)).toBe(false);
    grant.release();
    (await other.granted).release();
  });

  it('a server that dies holding a grant holds the others no longer than its death is seen (about a second)', async () => {
    const dir = dataDir();
    const warnings: string[] = [];
    const a = server(dir, 1021);
    const b = server(dir, 1022, warnings);
    await ask(a, 'sim-a').granted; // never released: A dies with it
    const ticket = ask(b, 'sim-b');
    expect(await settledWithin(ticket.granted, 200)).toBe(false);
    await a.close();
    alive.delete(1021);
    const grant = await ticket.granted;
    expect(grant.placement).toBe('alone');
    await vi.waitFor(() => expect(warnings.join('\n')).toMatch(/server 1021\.1021@box is gone/));
    grant.release();
  });

  it('a queue file left torn by a crash mid-write reads as empty, and the live servers put their calls back', async () => {
    const dir = dataDir();
    const a = server(dir, 1061);
    const held = await ask(a, 'sim-a').granted;
    const file = path.join(dir, 'queue', `${ollamaKeyOf(undefined)}.json`);
    writeFileSync(file, '{"v":1,"boot":"boot-1","queue":{"waiting":[{"id"'); // torn
    const store = new FileQueueStore({ telemetryDir: dir, ollamaKey: ollamaKeyOf(undefined), identity: identity(1069), proc });
    expect((await store.read()).queue.running).toEqual([]);
    // Within a tick (1 s), A writes its running call back.
    await vi.waitFor(async () => expect((await store.read()).queue.running.map((e) => e.model)).toEqual(['sim-a']), {
      timeout: 3_000,
    });
    held.release();
  });

  it('an aborted call leaves the queue, and the next one goes', async () => {
    const dir = dataDir();
    const a = server(dir, 1031);
    const b = server(dir, 1032);
    const held = await ask(a, 'sim-a').granted;
    const controller = new AbortController();
    const gone = ask(b, 'sim-b', controller.signal);
    const kept = ask(b, 'sim-a');
    controller.abort();
    await expect(gone.granted).rejects.toThrow(/aborted/);
    held.release();
    (await kept.granted).release();
  });

  it('when the queue cannot be used, a server dispatches on its own and says so once', async () => {
    const dir = dataDir();
    writeFileSync(path.join(dir, 'queue'), 'not a dir');
    const warnings: string[] = [];
    const a = server(dir, 1041, warnings);
    const grant = await ask(a, 'sim-a').granted;
    expect(grant.cold).toBe(true);
    grant.release();
    const second = await ask(a, 'sim-a').granted;
    expect(second.placement).toBe('loaded');
    second.release();
    expect(warnings.filter((w) => /shared queue .* cannot be used/.test(w))).toHaveLength(1);
  });
});

describe('the queue file', () => {
  it('loses no change when two servers write at once', async () => {
    const dir = dataDir();
    alive.add(1051).add(1052);
    const stores = [1051, 1052].map(
      (pid) => new FileQueueStore({ telemetryDir: dir, ollamaKey: 'k', identity: identity(pid), proc }),
    );
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        stores[i % 2]!.update((queue, now) => ({
          queue: {
            ...queue,
            waiting: [...queue.waiting, { id: `x${i}`, server: 's', model: 'm', parallel: 1, since: now, batch: null }],
          },
          result: null,
        })),
      ),
    );
    const { queue } = await stores[0]!.read();
    expect(queue.waiting.map((e) => e.id).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `x${i}`).sort());
  });

  it('a queue written in another boot is empty: its servers are gone', async () => {
    const dir = dataDir();
    const before = new FileQueueStore({ telemetryDir: dir, ollamaKey: 'k', identity: identity(1), proc });
    await before.update((queue) => ({ queue: { ...queue, lastStarted: { m: 1 } }, result: null }));
    const rebooted: SelfIdentity = { ...identity(1), place: { ...identity(1).place, boot: 'boot-2' } };
    const after = new FileQueueStore({ telemetryDir: dir, ollamaKey: 'k', identity: rebooted, proc });
    expect((await after.read()).queue.lastStarted).toEqual({});
  });
});

describe('ollamaKeyOf', () => {
  it('names the same local Ollama the same however OLLAMA_HOST spells it, and others apart', () => {
    const local = ollamaKeyOf(undefined);
    for (const host of ['', 'localhost', '127.0.0.1:11434', 'http://localhost:11434/', '0.0.0.0'])
      expect(ollamaKeyOf(host)).toBe(local);
    expect(ollamaKeyOf('gpu-box:11434')).not.toBe(local);
    expect(ollamaKeyOf('127.0.0.1:11500')).not.toBe(local);
    expect(ollamaKeyOf('https://gpu-box')).toBe('https-gpu-box-443');
    // As the CLI reads OLLAMA_HOST: a scheme without a port means that scheme's port, not 11434.
    expect(ollamaKeyOf('http://gpu-box')).toBe('http-gpu-box-80');
    expect(ollamaKeyOf('gpu-box')).toBe('http-gpu-box-11434');
    expect(ollamaKeyOf('[::1]:11434')).toBe(local);
  });
});
