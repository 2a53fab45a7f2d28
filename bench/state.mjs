// Benchmark 3: the per-run ledger/breaker transaction with 10,000 tasks recorded.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { StateStore } from '../dist/store/state-store.js';
import { BENCH_DIR, makeTempDir, removeTempDir, summarize } from './lib.mjs';
import { MODELS, applyRun, seedEntry } from './state-tx.mjs';

/**
 * @param {{ tasks: number, transactions: number, warmup: number }} options
 */
export async function measureState({ tasks, transactions, warmup }) {
  const dir = makeTempDir('state');
  const file = path.join(dir, 'state.json');
  const warnings = [];
  const onWarning = (m) => warnings.push(m);
  const store = new StateStore(file, { onWarning });
  const randomTask = () => `task-${Math.floor(Math.random() * tasks)}`;
  let runNo = 0;
  const tx = (s, taskId) => s.transact([taskId], (state) => applyRun(state, taskId, `bench-${runNo++}`));
  let hammer = null;

  try {
    // Seed 10,000 entries and every model's circuit in one 'all' transaction.
    const seedStart = performance.now();
    await store.transact('all', (state) => {
      const now = Date.now();
      for (let i = 0; i < tasks; i += 1) state.tasks[`task-${i}`] = seedEntry(i, now);
      for (const model of MODELS) state.breakers[model] = { state: 'closed', consecutiveFailures: 0 };
      state.prunedAt = now;
    });
    const seedMs = performance.now() - seedStart;
    const shardDir = path.join(dir, 'state.tasks');
    const shardFiles = existsSync(shardDir) ? readdirSync(shardDir).map((f) => path.join(shardDir, f)) : [];
    const mainFiles = existsSync(file) ? [file] : [];
    const ledgerBytes = [...mainFiles, ...shardFiles].reduce((sum, f) => sum + statSync(f).size, 0);

    // Warm: the server's own long-lived store (its caches hold what it last wrote). The floor runs
    // in blocks alternating with the warm ones, so slow drifts of the machine hit both alike; not
    // step by step, because each floor rename sets off writeback that the next store write would meet.
    const floor = makeFloor(dir, shardFiles.length > 0 ? shardFiles : mainFiles);
    for (let i = 0; i < warmup; i += 1) {
      await tx(store, randomTask());
      floor.step();
    }
    const warmSamples = [];
    const floorSamples = [];
    const BLOCK = 25;
    for (let done = 0; done < transactions; done += BLOCK) {
      const count = Math.min(BLOCK, transactions - done);
      for (let i = 0; i < count; i += 1) {
        const taskId = randomTask();
        const t0 = performance.now();
        await tx(store, taskId);
        warmSamples.push(performance.now() - t0);
      }
      for (let i = 0; i < count; i += 1) floorSamples.push(floor.step());
    }

    // Cold: a fresh instance per transaction, so nothing is cached (another process's view after
    // someone else wrote): state.json and the task's shard are read, validated and parsed.
    const coldSamples = [];
    const constructSamples = [];
    for (let i = 0; i < transactions; i += 1) {
      const taskId = randomTask();
      const c0 = performance.now();
      const fresh = new StateStore(file, { onWarning });
      const t0 = performance.now();
      await tx(fresh, taskId);
      coldSamples.push(performance.now() - t0);
      constructSamples.push(t0 - c0);
    }

    // Contention: a second process hammers the same store while the warm transactions repeat.
    hammer = spawn(process.execPath, [path.join(BENCH_DIR, 'state-hammer.mjs'), file, String(tasks), '120'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let hammerStderr = '';
    hammer.stderr.on('data', (c) => (hammerStderr += c));
    const lines = createInterface({ input: hammer.stdout });
    const hammerLines = [];
    const ready = new Promise((resolve, reject) => {
      lines.on('line', (line) => {
        hammerLines.push(line);
        if (line === 'ready') resolve();
      });
      hammer.once('exit', (code) => reject(new Error(`state-hammer exited early (${code}): ${hammerStderr.slice(-500)}`)));
    });
    await ready;
    const contendedSamples = [];
    const contendedStart = performance.now();
    for (let i = 0; i < transactions; i += 1) {
      const taskId = randomTask();
      const t0 = performance.now();
      await tx(store, taskId);
      contendedSamples.push(performance.now() - t0);
    }
    const contendedSeconds = (performance.now() - contendedStart) / 1000;
    hammer.stdin.end();
    const [code] = hammer.exitCode === null ? await once(hammer, 'exit') : [hammer.exitCode];
    hammer = null;
    if (code !== 0) throw new Error(`state-hammer failed (${code}): ${hammerStderr.slice(-500)}`);
    const hammerStats = JSON.parse(hammerLines.at(-1));

    // Integrity: every seeded task is still there, nothing was set aside as corrupt.
    const all = await new StateStore(file, { onWarning }).snapshot('all');
    const count = Object.keys(all.tasks).length;
    if (count !== tasks) throw new Error(`ledger has ${count} tasks after the benchmark, expected ${tasks}`);
    if (warnings.length > 0) throw new Error(`state store warnings: ${warnings.slice(0, 3).join(' | ')}`);

    return {
      tasks,
      transactions,
      seedMs,
      ledgerBytes,
      shards: shardFiles.length,
      floor: { ...summarize(floorSamples), shardBytes: floor.shardBytes },
      warm: summarize(warmSamples),
      cold: summarize(coldSamples),
      construct: summarize(constructSamples),
      contended: summarize(contendedSamples),
      contendedTxPerS: transactions / contendedSeconds,
      hammerTxPerS: hammerStats.transactions / hammerStats.seconds,
    };
  } finally {
    if (hammer && hammer.exitCode === null) {
      hammer.kill('SIGKILL');
      await once(hammer, 'exit').catch(() => {});
    }
    removeTempDir(dir);
  }
}

/**
 * The floor of one locked transaction on this machine, with the same files: a synchronous lock
 * (an exclusively created file, unlinked to release, as the store's), then one task shard (a random one, as the store's transactions spread over the shards;
 * state.json is rewritten only when a circuit changes) serialised and written temp-then-rename,
 * then unlock. No reads (a warm store has them cached) and no policy work: what an exact,
 * tear-free, cross-process store has to pay at least. Done on copies, so the store's own files and
 * caches are untouched. Returns one step (one timed transaction) at a time, so the caller can
 * alternate it with the store's own transactions.
 */
function makeFloor(dir, files) {
  const floorDir = path.join(dir, 'floor');
  mkdirSync(floorDir);
  const docs = files.map((f, i) => {
    const copy = path.join(floorDir, `${i}-${path.basename(f)}`);
    copyFileSync(f, copy);
    return { file: copy, data: JSON.parse(readFileSync(copy, 'utf8')) };
  });
  const lock = path.join(floorDir, 'state.json.lock');
  return {
    shardBytes: docs.reduce((sum, d) => sum + statSync(d.file).size, 0) / (docs.length || 1),
    step() {
      const doc = docs[Math.floor(Math.random() * docs.length)];
      const t0 = performance.now();
      closeSync(openSync(lock, 'wx'));
      writeFileSync(`${doc.file}.tmp`, JSON.stringify(doc.data));
      renameSync(`${doc.file}.tmp`, doc.file);
      unlinkSync(lock);
      return performance.now() - t0;
    },
  };
}
