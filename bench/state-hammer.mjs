// Child process for the contention part of the state benchmark: back-to-back locked transactions
// on the same store, the kind a second server process makes per run, until its stdin closes
// (or MAX_SECONDS pass, so it can never outlive a crashed parent for long).
// Prints `ready` after its first transaction, and `{"transactions":N,"seconds":S}` when it stops.
import { performance } from 'node:perf_hooks';
import { StateStore } from '../dist/store/state/state-store.js';
import { applyRun } from './state-tx.mjs';

const [file, tasksText, maxSecondsText] = process.argv.slice(2);
const tasks = Number(tasksText);
const maxMs = Number(maxSecondsText) * 1000;
const store = new StateStore(file, { onWarning: (m) => process.stderr.write(`hammer: ${m}\n`) });

let stop = false;
process.stdin.on('data', () => {});
process.stdin.on('end', () => (stop = true));
process.stdin.on('close', () => (stop = true));
process.stdin.resume();

const started = performance.now();
let count = 0;
let measuredFrom = 0;
while (!stop && performance.now() - started < maxMs) {
  const taskId = `task-${Math.floor(Math.random() * tasks)}`;
  await store.transact([taskId], (state) => applyRun(state, taskId, `hammer-${process.pid}-${count}`));
  count += 1;
  if (count === 1) {
    measuredFrom = performance.now();
    process.stdout.write('ready\n');
  }
  // Let the stdin 'end' event through between transactions.
  await new Promise((resolve) => setImmediate(resolve));
}
process.stdout.write(`${JSON.stringify({ transactions: count - 1, seconds: (performance.now() - measuredFrom) / 1000 })}\n`);
