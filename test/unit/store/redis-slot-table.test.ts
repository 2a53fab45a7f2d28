import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProcView } from '../../../src/policy/process-identity.js';
import type { SelfIdentity } from '../../../src/store/processes/proc-reader.js';
import { RedisSlotTable } from '../../../src/store/slots/redis-slot-table.js';
import { RedisStateStore } from '../../../src/store/state/redis-state-store.js';
import { SharedSlots } from '../../../src/store/slots/shared-slots.js';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

noteRedisSkipped();

/** Every process is on another machine as seen from the others: /proc tells nothing about it. */
const proc: ProcView = { startOf: () => null, exists: () => false, cmdlineOf: () => null };
const machine = (host: string, pid: number): SelfIdentity => ({
  self: { pid, start: pid * 10 },
  place: { host, boot: `boot-${host}`, pidns: 'pid:[1]' },
  hasProc: true,
});

describe.skipIf(!REDIS_SERVER_AVAILABLE)('RedisSlotTable against a real redis-server', () => {
  let redis: RedisServer;
  const stores: RedisStateStore[] = [];
  let db = 0;
  /** A server's Redis connection (as team mode opens it), on `database`. */
  const connect = (database: number) => {
    const store = new RedisStateStore({ url: redis.url(database), prefix: 'cap:', taskTtlMs: 60_000, warn: () => {} });
    stores.push(store);
    return store.connection;
  };
  /** One command on `database`, from a client of its own. */
  const raw = async (database: number, args: string[]) => {
    const connection = connect(database);
    await connection.connected();
    return connection.client.sendCommand(args);
  };
  const table = (
    database: number,
    host: string,
    pid: number,
    over: { limit?: number; leaseMs?: number; warn?: (m: string) => void } = {},
  ) =>
    new RedisSlotTable({
      connection: connect(database),
      limit: over.limit ?? 2,
      identity: machine(host, pid),
      proc,
      warn: over.warn ?? (() => {}),
      ...(over.leaseMs !== undefined ? { leaseMs: over.leaseMs } : {}),
    });

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await redis?.dispose();
  });

  it('at most `limit` slots across machines; each shows its holder (host and pid); a release frees it', async () => {
    db += 1;
    const a = table(db, 'alpha', 100);
    const b = table(db, 'beta', 200);
    const releaseA0 = await a.claim();
    const releaseA1 = await a.claim();
    expect(releaseA0).not.toBeNull();
    expect(releaseA1).not.toBeNull();
    expect(await b.claim()).toBeNull();
    expect((await b.view()).map((s) => [s.slot, s.host, s.pid, s.holder])).toEqual([
      [0, 'alpha', 100, 'unknown'],
      [1, 'alpha', 100, 'unknown'],
    ]);
    expect((await a.view()).map((s) => s.holder)).toEqual(['this_server', 'this_server']);
    releaseA0!();
    releaseA0!(); // harmless twice
    const releaseB = await b.claim();
    expect(releaseB).not.toBeNull();
    expect((await a.view()).map((s) => [s.slot, s.host])).toEqual([
      [0, 'beta'],
      [1, 'alpha'],
    ]);
    releaseA1!();
    releaseB!();
    await delay(50);
    expect(await a.view()).toEqual([]);
  });

  it('a release deletes the slot only while it still names its holder (a lost lease re-taken elsewhere stays taken)', async () => {
    db += 1;
    const a = table(db, 'alpha', 100, { limit: 1 });
    const b = table(db, 'beta', 200, { limit: 1 });
    const releaseA = await a.claim();
    // A's lease runs out (its machine was cut off from Redis), and B takes the slot.
    await raw(db, ['DEL', 'cap:slot:0']);
    const releaseB = await b.claim();
    expect(releaseB).not.toBeNull();
    releaseA!();
    await delay(50);
    expect((await b.view()).map((s) => [s.host, s.holder])).toEqual([['beta', 'this_server']]);
    expect(await a.claim()).toBeNull();
    releaseB!();
  });

  it('a holder renews its lease while it holds the slot; a lease not renewed runs out and the slot is taken', async () => {
    db += 1;
    const a = table(db, 'alpha', 100, { limit: 1, leaseMs: 300 });
    const releaseA = await a.claim();
    await delay(1_000); // more than three leases: renewed every 100 ms
    const ttl = Number(await raw(db, ['PTTL', 'cap:slot:0']));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    expect(await table(db, 'beta', 200, { limit: 1 }).claim()).toBeNull();
    releaseA!();

    // A server on a machine that died: its slot, never renewed, frees itself when the lease runs out.
    const dead = JSON.stringify({ pid: 77, start: 1, host: 'gone', boot: 'b', pidns: 'p', at: Date.now(), id: 'x' });
    await raw(db, ['SET', 'cap:slot:0', dead, 'PX', '400']);
    const slots = new SharedSlots({ table: table(db, 'beta', 200, { limit: 1 }), warn: () => {} });
    const started = Date.now();
    const release = await slots.request().granted;
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(slots.heldHere).toBe(1);
    expect((await slots.view()).map((s) => [s.host, s.pid, s.holder])).toEqual([['beta', 200, 'this_server']]);
    release();
  });

  it('Redis down: runs go ahead uncapped, said once and kept for health; the cap holds again when it is back', async () => {
    const own = await startRedisServer();
    const store = new RedisStateStore({ url: own.url(0), prefix: 'cap:', taskTtlMs: 60_000, warn: () => {} });
    try {
      const warnings: string[] = [];
      const slots = new SharedSlots({
        table: new RedisSlotTable({
          connection: store.connection,
          limit: 1,
          identity: machine('alpha', 100),
          proc,
          warn: () => {},
        }),
        warn: (m) => warnings.push(m),
      });
      const held = await slots.request().granted;
      expect(slots.heldHere).toBe(1);
      await own.stop();
      // Both go ahead although the one slot is held: the cap cannot be checked.
      await slots.request().granted;
      await slots.request().granted;
      expect(slots.heldHere).toBe(1);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('runs go ahead without the cap across servers on every machine sharing the Redis');
      expect(warnings[0]).toContain(store.location);
      expect(slots.lastError).toContain(store.location);
      expect(slots.lastError).toContain('not connected to Redis');
      held(); // its delete is lost with the server; the restarted one is empty anyway

      await own.start();
      for (let i = 0; i < 100 && slots.lastError !== null; i += 1) {
        await delay(100);
        const release = await slots.request().granted;
        release();
      }
      expect(slots.lastError).toBeNull();
      expect(warnings[1]).toContain('work again');
      const first = await slots.request().granted;
      const controller = new AbortController();
      const second = slots.request(controller.signal);
      await delay(200);
      expect(second.position()).toBe(1); // the cap holds again: it waits
      controller.abort();
      await expect(second.granted).rejects.toThrow(/aborted/);
      first();
    } finally {
      await store.close();
      await own.dispose();
    }
  });
});
