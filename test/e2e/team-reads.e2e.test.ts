// In team mode every read of the circuits is a Redis round trip. A call with a fallback chain reads
// the circuits of the models after its first only when a failure would hand the call on to them:
// on the happy path it costs Redis exactly what the same call without a chain costs.
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteRedisSkipped, REDIS_SERVER_AVAILABLE, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { startTestServer } from './harness.js';

noteRedisSkipped();

describe.skipIf(!REDIS_SERVER_AVAILABLE)('team mode: what a chained call reads from Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  /** Redis's own count of the commands that read state (MGET, GET), from INFO commandstats. */
  async function reads(): Promise<number> {
    const client = createClient({ url: redis.url() });
    await client.connect();
    try {
      const info = await client.sendCommand<string>(['INFO', 'commandstats']);
      return [...info.matchAll(/^cmdstat_(?:mget|get):calls=(\d+)/gm)].reduce((sum, [, calls]) => sum + Number(calls), 0);
    } finally {
      await client.quit();
    }
  }

  it('on the happy path, no read for the circuits of the fallback models it does not try', async () => {
    const server = await startTestServer({
      OLLAMA_MCP_STATE_URL: redis.url(1),
      FAKE_OLLAMA_MODELS: 'first:1b,second:1b,third:1b',
    });
    await server.run({ model: 'first:1b', prompt: 'warm up', task_id: 'warm' });
    const plainFrom = await reads();
    const plain = await server.run({ model: 'first:1b', prompt: 'x', task_id: 'plain' });
    const plainReads = (await reads()) - plainFrom;
    const chainedFrom = await reads();
    const chained = await server.run({
      model: 'first:1b',
      fallback_models: ['second:1b', 'third:1b'],
      prompt: 'x',
      task_id: 'chained',
    });
    const chainedReads = (await reads()) - chainedFrom;
    expect(plain.metadata.status).toBe('ok');
    expect(chained.metadata).toMatchObject({ status: 'ok', model: 'first:1b', fallback: [] });
    expect(plainReads).toBeGreaterThan(0);
    expect(chainedReads).toBe(plainReads);
  });
});
