// Benchmark 3: the per-run ledger/breaker transaction with 10,000 tasks recorded, the lock-free read,
// their floor, and that every task is still there afterwards.
// Standalone: `npm run build && node bench/state.mjs` (prints these figures only).
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { open, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { StateStore } from '../dist/store/state/state-store.js';
import { makeTempDir, ms, removeTempDir, timeEach } from './lib.mjs';
import { closeCircuits, randomTask, runOnRandomTask, seedEntry } from './state-tx.mjs';

/**
 * @param {{ tasks: number, transactions: number, warmup: number }} options
 */
export async function measureState({ tasks, transactions, warmup }) {
  const dir = makeTempDir('state');
  const file = path.join(dir, 'state.json');
  const warnings = [];
  const onWarning = (m) => warnings.push(m);
  const store = new StateStore(file, { onWarning });

  try {
    // Seed 10,000 entries and every model's circuit in one 'all' transaction.
    const seedStart = performance.now();
    await store.transact('all', (state) => {
      const now = Date.now();
      for (let i = 0; i < tasks; i += 1) state.tasks[`task-${i}`] = seedEntry(i, now);
      closeCircuits(state);
      state.prunedAt = now;
    });
    const seedMs = performance.now() - seedStart;
    const shardDir = path.join(dir, 'state.tasks');
    const shardFiles = existsSync(shardDir) ? readdirSync(shardDir).map((f) => path.join(shardDir, f)) : [];
    const ledgerBytes = [file, ...shardFiles].reduce((sum, f) => sum + statSync(f).size, 0);

    for (let i = 0; i < warmup; i += 1) await runOnRandomTask(store, tasks);
    const warm = await timeEach(transactions, () => runOnRandomTask(store, tasks));
    // The admission read of a run (block mode: with its task), without the lock.
    const read = await timeEach(transactions, () => store.snapshot([randomTask(tasks)]));
    const floor = await measureFloor(dir, shardFiles, transactions);

    // Integrity: every seeded task is still there, nothing was set aside as corrupt.
    const all = await new StateStore(file, { onWarning }).snapshot('all');
    const tasksAfter = Object.keys(all.tasks).length;
    if (tasksAfter !== tasks) throw new Error(`ledger has ${tasksAfter} tasks after the benchmark, expected ${tasks}`);
    if (warnings.length > 0) throw new Error(`state store warnings: ${warnings.slice(0, 3).join(' | ')}`);

    return { tasks, tasksAfter, transactions, seedMs, ledgerBytes, shards: shardFiles.length, warm, read, floor };
  } finally {
    removeTempDir(dir);
  }
}

/**
 * The least a locked transaction can cost here, with the same files: take an exclusively created
 * lock file, serialise one task shard (a random one, as transactions spread over the shards) and
 * write it temp-then-rename, remove the lock; no reads, no validation, no policy. Done on copies.
 */
async function measureFloor(dir, files, count) {
  const floorDir = path.join(dir, 'floor');
  mkdirSync(floorDir);
  const docs = files.map((f, i) => {
    const copy = path.join(floorDir, `${i}-${path.basename(f)}`);
    copyFileSync(f, copy);
    return { file: copy, data: JSON.parse(readFileSync(copy, 'utf8')) };
  });
  const lock = path.join(floorDir, 'state.json.lock');
  return timeEach(count, async () => {
    const doc = docs[Math.floor(Math.random() * docs.length)];
    await (await open(lock, 'wx')).close();
    await writeFile(`${doc.file}.tmp`, JSON.stringify(doc.data));
    await rename(`${doc.file}.tmp`, doc.file);
    await unlink(lock);
  });
}

/** The lines bench/run.mjs prints for this benchmark. */
export function stateLines(s) {
  return [
    `  seeded ${s.tasks} tasks in ${ms(s.seedMs, 0)} ms (${(s.ledgerBytes / 1024).toFixed(0)} KiB in state.json + ${s.shards} shards)`,
    `  transaction p50 ${ms(s.warm.p50, 3)}  p95 ${ms(s.warm.p95, 3)}  max ${ms(s.warm.max, 3)} ms`,
    `  read        p50 ${ms(s.read.p50, 3)}  p95 ${ms(s.read.p95, 3)} ms  (a snapshot of one task and the circuits, no lock)`,
    `  floor       p50 ${ms(s.floor.p50, 3)}  p95 ${ms(s.floor.p95, 3)} ms  (lock file + write-temp-rename of one shard, nothing else)`,
    `  ${s.tasksAfter.toLocaleString('en-US')} of ${s.tasks.toLocaleString('en-US')} tasks in the ledger afterwards`,
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const quick = process.env.BENCH_QUICK === '1';
  const figures = await measureState({ tasks: 10_000, transactions: quick ? 50 : 500, warmup: quick ? 5 : 50 });
  process.stdout.write(`${stateLines(figures).join('\n')}\n`);
}
