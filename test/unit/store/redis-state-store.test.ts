import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@redis/client';
import { admit } from '../../../src/policy/breaker.js';
import { CLOSED } from '../../../src/policy/breaker-state.js';
import { recordAttempt, retryCountFor } from '../../../src/policy/task-ledger.js';
import { RedisStateStore } from '../../../src/store/state/redis-state-store.js';
import type { StateData } from '../../../src/store/state-backend.js';
import { isStateStoreError } from '../../../src/store/state/state-store-error.js';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

noteRedisSkipped();

const DAY_MS = 86_400_000;

/** One failed attempt recorded for `taskId`, as the ledger does it; returns its retry_count. */
function recordFailure(state: StateData, taskId: string, runId: string, now: number): number {
  const entry = state.tasks[taskId];
  const retryCount = retryCountFor(entry, undefined);
  state.tasks[taskId] = recordAttempt(entry, {
    status: 'crashed',
    retryCount,
    runId,
    model: 'llama3.2',
    escalationReason: null,
    now,
  });
  return retryCount;
}

describe.skipIf(!REDIS_SERVER_AVAILABLE)('RedisStateStore against a real redis-server', () => {
  let redis: RedisServer;
  const stores: RedisStateStore[] = [];
  let db = 0;
  /** A store on a fresh database (one per test, so tests do not see each other's keys). */
  const open = (over: Partial<ConstructorParameters<typeof RedisStateStore>[0]> = {}, database = db): RedisStateStore => {
    const store = new RedisStateStore({
      url: redis.url(database),
      prefix: 'test:',
      taskTtlMs: 30 * DAY_MS,
      warn: () => {},
      ...over,
    });
    stores.push(store);
    return store;
  };
  const fresh = () => {
    db += 1;
    return db;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await redis?.dispose();
  });

  it('two clients hammering one task from side to side lose no update and count none twice', async () => {
    fresh();
    const [a, b] = [open(), open()];
    const perClient = 40;
    const counts = await Promise.all(
      Array.from({ length: perClient * 2 }, (_, i) =>
        (i % 2 === 0 ? a : b).transact(['shared'], (state) => recordFailure(state, 'shared', `run-${i}`, 1_000 + i)),
      ),
    );
    expect([...counts].sort((x, y) => x - y)).toEqual(Array.from({ length: perClient * 2 }, (_, i) => i));
    const { tasks } = await a.snapshot(['shared']);
    expect(tasks.shared).toMatchObject({ attempts: perClient * 2, failures: perClient * 2 });
  });

  it('hands the half-open probe lease to exactly one of many contenders across clients', async () => {
    fresh();
    const [a, b] = [open(), open()];
    await a.transact([], (state) => {
      state.breakers['llama3.2'] = { state: 'open', consecutiveFailures: 5, openedAt: 0, retryAt: 1_000 };
    });
    const now = 2_000; // past retryAt: the next caller becomes the probe
    const decisions = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? a : b).transact([], (state) => {
          const decision = admit(state.breakers['llama3.2'] ?? CLOSED, now, `run-${i}`, 60_000);
          state.breakers['llama3.2'] = decision.next;
          return decision;
        }),
      ),
    );
    const admitted = decisions.filter((d) => d.admitted);
    expect(admitted).toHaveLength(1);
    expect(decisions.filter((d) => !d.admitted && d.reason === 'probe_in_flight')).toHaveLength(11);
    const { breakers } = await b.snapshot();
    expect(breakers['llama3.2']).toMatchObject({ state: 'half_open', probe: { leaseUntil: now + 60_000 } });
  });

  it('gives each task key the task TTL (Redis prunes it), refreshed by every update', async () => {
    const database = fresh();
    const store = open({ taskTtlMs: 5 * DAY_MS });
    await store.transact(['t1'], (state) => void recordFailure(state, 't1', 'r1', 1));
    const raw = createClient({ url: redis.url(database) });
    await raw.connect();
    try {
      const ttl = await raw.pTTL('test:task:t1');
      expect(ttl).toBeGreaterThan(5 * DAY_MS - 60_000);
      expect(ttl).toBeLessThanOrEqual(5 * DAY_MS);
      await raw.pExpire('test:task:t1', 10_000);
      await store.transact(['t1'], (state) => void recordFailure(state, 't1', 'r2', 2));
      expect(await raw.pTTL('test:task:t1')).toBeGreaterThan(5 * DAY_MS - 60_000);
      // The circuits never expire; deleting a task deletes its key.
      expect(await raw.pTTL('test:circuits')).toBe(-2); // nothing written to the circuits yet
      await store.transact(['t1'], (state) => void delete state.tasks.t1);
      expect(await raw.exists('test:task:t1')).toBe(0);
      // A key that expired is a task with no record.
      await store.transact(['t2'], (state) => void recordFailure(state, 't2', 'r3', 3));
      await raw.pExpire('test:task:t2', 1);
      await expect.poll(async () => (await store.snapshot(['t2'])).tasks.t2, { timeout: 5_000 }).toBeUndefined();
    } finally {
      raw.destroy();
    }
  });

  it('keeps servers with different prefixes apart on one Redis', async () => {
    const database = fresh();
    const teamA = open({ prefix: 'team-a:' }, database);
    const teamB = open({ prefix: 'team-b:' }, database);
    await teamA.transact(['task'], (state) => {
      recordFailure(state, 'task', 'r1', 1);
      state.breakers['llama3.2'] = { state: 'open', consecutiveFailures: 5, openedAt: 0, retryAt: 10 };
    });
    const seenByB = await teamB.snapshot(['task']);
    expect(seenByB.tasks.task).toBeUndefined();
    expect(seenByB.breakers['llama3.2']).toBeUndefined();
    expect((await teamA.snapshot(['task'])).tasks.task).toMatchObject({ attempts: 1 });
  });

  it('writes nothing for a transaction that changes nothing, and rejects a task outside the scope', async () => {
    fresh();
    const store = open();
    expect(await store.transact(['x'], (state) => Object.keys(state.tasks).length)).toBe(0);
    expect((await store.snapshot(['x'])).tasks.x).toBeUndefined();
    const outside = store.transact(['x'], (state) => void recordFailure(state, 'y', 'r', 1));
    await expect(outside).rejects.toThrow(/outside the transaction's scope/);
    // An error of fn itself is the caller's, not a store failure.
    await expect(
      store.transact([], () => {
        throw new RangeError('policy bug');
      }),
    ).rejects.toThrow(RangeError);
    expect(store.lastWriteFailure).toBeNull();
  });

  it('treats a malformed value as absent, says so, and overwrites it', async () => {
    const database = fresh();
    const warnings: string[] = [];
    const store = open({ warn: (message) => warnings.push(message) });
    const raw = createClient({ url: redis.url(database) });
    await raw.connect();
    try {
      await raw.set('test:task:bad', '{not json');
      await raw.set('test:circuits', '{"version":1,"breakers":{"m":{"state":"weird"}},"prunedAt":0}');
      const retryCount = await store.transact(['bad'], (state) => recordFailure(state, 'bad', 'r', 1));
      expect(retryCount).toBe(0);
      expect(warnings.join('\n')).toMatch(/test:task:bad .* is not a valid task entry/);
      expect(warnings.join('\n')).toMatch(/dropped circuit "m"/);
      expect(JSON.parse((await raw.get('test:task:bad'))!)).toMatchObject({ attempts: 1 });
    } finally {
      raw.destroy();
    }
  });

  it('says what is wrong with a stored value once per value, not on every read', async () => {
    const database = fresh();
    const warnings: string[] = [];
    const store = open({ warn: (message) => warnings.push(message) });
    const raw = createClient({ url: redis.url(database) });
    await raw.connect();
    try {
      await raw.set('test:task:bad', '{not json');
      await raw.set('test:circuits', '{"version":1,"breakers":{"m":{"state":"weird"}},"prunedAt":0}');
      for (let i = 0; i < 3; i += 1) await store.snapshot(['bad']);
      expect(warnings).toHaveLength(2);
      await raw.set('test:task:bad', '{"attempts":"many"}');
      await store.snapshot(['bad']);
      expect(warnings).toHaveLength(3);
    } finally {
      raw.destroy();
    }
  });

  it('keeps an escalated task four times the task TTL (Redis prunes the others after the TTL)', async () => {
    const database = fresh();
    const store = open({ taskTtlMs: 5 * DAY_MS });
    await store.transact(['esc'], (state) => {
      recordFailure(state, 'esc', 'r1', 1);
      state.tasks.esc = { ...state.tasks.esc!, escalated: true, escalationReason: 'max_retries_exceeded' };
    });
    const raw = createClient({ url: redis.url(database) });
    await raw.connect();
    try {
      expect(await raw.pTTL('test:task:esc')).toBeGreaterThan(20 * DAY_MS - 60_000);
    } finally {
      raw.destroy();
    }
  });

  it('with Redis unreachable fails fast with a StateStoreError that never shows the password', async () => {
    const deadPort = redis.port + 1 === 65_536 ? redis.port - 1 : redis.port + 1;
    const warnings: string[] = [];
    const store = new RedisStateStore({
      url: `redis://alice:s3cr%40t-pass@127.0.0.1:${deadPort}/0`,
      prefix: 'x:',
      taskTtlMs: DAY_MS,
      warn: (message) => warnings.push(message),
    });
    stores.push(store);
    const started = performance.now();
    const failure = await store.transact(['t'], () => 1).catch((error: unknown) => error);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(isStateStoreError(failure)).toBe(true);
    const message = (failure as Error).message;
    expect(message).toContain(`redis://alice:***@127.0.0.1:${deadPort}/0`);
    expect(store.lastWriteFailure?.message).toBe(message);
    const status = await store.status();
    expect(status).toMatchObject({ kind: 'redis', reachable: false });
    expect(await store.inspect()).toHaveLength(1);
    await expect.poll(() => warnings.length, { timeout: 5_000 }).toBeGreaterThan(0);
    const everything = [message, JSON.stringify(status), ...warnings].join('\n');
    expect(everything).not.toMatch(/s3cr|%40t-pass|t-pass/);
    // One line for the outage, not one per reconnection attempt.
    expect(warnings.filter((w) => /cannot connect to Redis/.test(w))).toHaveLength(1);
  });
});
