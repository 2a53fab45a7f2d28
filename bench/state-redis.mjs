// Team mode: the per-run ledger/breaker transaction (the same applyRun as bench/state.mjs) on a real
// Redis (src/store/state/redis-state-store.ts), next to the file store's figures from the same run.
// Needs `redis-server` on PATH (Debian: apt-get install redis-server); skipped with one line otherwise.
// Standalone: `npm run build && node bench/state-redis.mjs` (prints the Redis figures only).
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { makeTempDir, ms, removeTempDir, timeEach } from './lib.mjs';
import { closeCircuits, randomTask, runOnRandomTask, seedEntry } from './state-tx.mjs';

export const REDIS_AVAILABLE = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * @param {{ tasks: number, transactions: number, warmup: number }} options
 * @returns the figures, or null when redis-server is not installed
 */
export async function measureStateRedis({ tasks, transactions, warmup }) {
  if (!REDIS_AVAILABLE) return null;
  const { RedisStateStore } = await import('../dist/store/state/redis-state-store.js');
  const dir = makeTempDir('redis');
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const server = spawn('redis-server', args, { stdio: 'ignore' });
  const open = () =>
    new RedisStateStore({ url: `redis://127.0.0.1:${port}/0`, prefix: 'bench:', taskTtlMs: 30 * 86_400_000, warn: () => {} });
  const stores = [];
  try {
    const store = open();
    stores.push(store);
    await waitReachable(store);
    const { client } = store.connection;
    // Seed the tasks and every circuit directly, as a long-used team ledger.
    const now = Date.now();
    for (let from = 0; from < tasks; from += 1_000) {
      const seed = client.multi(); // in batches: the store bounds its client's queue
      for (let i = from; i < Math.min(tasks, from + 1_000); i += 1) {
        seed.set(`bench:task:task-${i}`, JSON.stringify(seedEntry(i, now)), { PX: 30 * 86_400_000 });
      }
      await seed.exec();
    }
    await store.transact([], closeCircuits);

    for (let i = 0; i < warmup; i += 1) await runOnRandomTask(store, tasks);
    const warm = await timeEach(transactions, () => runOnRandomTask(store, tasks));
    // The admission read of every run with a task_id: MGET of the circuits and the task.
    const snapshot = await timeEach(transactions, () => store.snapshot([randomTask(tasks)]));

    // Contended: a second client (another server) updating other tasks as fast as it can; both
    // touch the circuits key, so some transactions meet a conflict and run again.
    const other = open();
    stores.push(other);
    await waitReachable(other);
    let hammering = true;
    let hammerTx = 0;
    const hammer = (async () => {
      while (hammering) {
        await runOnRandomTask(other, tasks);
        hammerTx += 1;
      }
    })();
    const c0 = performance.now();
    const contended = await timeEach(transactions, () => runOnRandomTask(store, tasks));
    const contendedS = (performance.now() - c0) / 1000;
    hammering = false;
    await hammer;
    return { tasks, warm, snapshot, contended, contendedTxPerS: transactions / contendedS, hammerTxPerS: hammerTx / contendedS };
  } finally {
    await Promise.all(stores.map((s) => s.close()));
    server.kill('SIGTERM');
    if (server.exitCode === null) await once(server, 'exit');
    removeTempDir(dir);
  }
}

/** The lines bench/run.mjs prints after the file ledger's (`files`: measureState's result, optional). */
export async function stateRedisLines(options, files) {
  if (!REDIS_AVAILABLE) return ['  Redis (team mode): skipped, redis-server is not installed (apt-get install redis-server)', ''];
  const r = await measureStateRedis(options);
  const vs = () => (files ? `  (files warm p50 ${ms(files.warm.p50, 3)} ms)` : '');
  return [
    `  Redis (team mode, loopback redis-server, ${r.tasks} tasks):`,
    `  redis tx   p50 ${ms(r.warm.p50, 3)}  p95 ${ms(r.warm.p95, 3)}  max ${ms(r.warm.max, 3)} ms${vs()}`,
    `  redis read p50 ${ms(r.snapshot.p50, 3)}  p95 ${ms(r.snapshot.p95, 3)} ms  (admission snapshot: one MGET)`,
    `  redis contended p50 ${ms(r.contended.p50, 3)}  p95 ${ms(r.contended.p95, 3)}  max ${ms(r.contended.max, 3)} ms  (${r.contendedTxPerS.toFixed(0)} tx/s here, ${r.hammerTxPerS.toFixed(0)} tx/s by a second client)`,
    '',
  ];
}

async function waitReachable(store) {
  for (let i = 0; i < 100; i += 1) {
    if ((await store.status()).reachable) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('redis-server did not answer');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const quick = process.env.BENCH_QUICK === '1';
  const lines = await stateRedisLines({ tasks: 10_000, transactions: quick ? 50 : 500, warmup: quick ? 5 : 50 });
  process.stdout.write(`${lines.join('\n')}\n`);
}
