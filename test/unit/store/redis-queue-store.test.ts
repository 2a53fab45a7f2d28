import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addWaiting, dropGoneServers, touchServer } from '../../../src/policy/shared-queue.js';
import type { ProcView } from '../../../src/policy/process-identity.js';
import type { SelfIdentity } from '../../../src/store/processes/proc-reader.js';
import { RedisQueueStore } from '../../../src/store/queue/redis-queue-store.js';
import { RedisStateStore } from '../../../src/store/state/redis-state-store.js';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

noteRedisSkipped();

/** Every server is on another machine as seen from the others: only its lease tells it is gone. */
const proc: ProcView = { startOf: () => null, exists: () => false, cmdlineOf: () => null };
const machine = (host: string, pid: number): SelfIdentity => ({
  self: { pid, start: pid * 10 },
  place: { host, boot: `boot-${host}`, pidns: 'pid:[1]' },
  hasProc: true,
});

describe.skipIf(!REDIS_SERVER_AVAILABLE)('the shared queue on a real redis-server (team mode)', () => {
  let redis: RedisServer;
  const stores: RedisStateStore[] = [];
  const queueStore = (database: number, host: string, pid: number) => {
    const state = new RedisStateStore({ url: redis.url(database), prefix: 'q:', taskTtlMs: 60_000, warn: () => {} });
    stores.push(state);
    return new RedisQueueStore({
      connection: state.connection,
      ollamaKey: 'http-127.0.0.1-11434',
      identity: machine(host, pid),
      proc,
    });
  };

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await redis?.dispose();
  });

  it('loses no change when servers on two machines write at once (compare-and-set, tried again)', async () => {
    const [a, b] = [queueStore(1, 'box-a', 1), queueStore(1, 'box-b', 2)];
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? a : b).update((queue, now) => ({
          queue: addWaiting(queue, {
            id: `x${i}`,
            server: i % 2 === 0 ? 'a' : 'b',
            model: 'm',
            parallel: 1,
            since: now,
            batch: null,
          }),
          result: null,
        })),
      ),
    );
    const { queue } = await b.read();
    expect(queue.waiting.map((e) => e.id).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `x${i}`).sort());
  });

  it("times the queue by Redis's clock, the same for every machine, and judges another machine's server by its lease only", async () => {
    const a = queueStore(2, 'box-a', 1);
    const before = Date.now();
    const { now } = await a.read();
    expect(Math.abs(now - before)).toBeLessThan(5_000); // Redis's TIME, here on this machine's clock
    const server = { pid: 7, start: 70, host: 'box-b', boot: 'boot-box-b', pidns: 'pid:[1]', concurrency: 3 };
    expect(a.judge('b', { ...server, seenAt: now })).toBe('here'); // /proc cannot see box-b
    await a.update((queue, at) => ({ queue: touchServer(queue, 'b', server, at), result: null }));
    const { queue, now: later } = await a.read();
    expect(dropGoneServers(queue, later, 10_000, a.judge).gone).toEqual([]);
    expect(dropGoneServers(queue, later + 10_001, 10_000, a.judge).gone).toEqual(['b']);
  });
});
