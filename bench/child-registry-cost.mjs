// What recording a model process (store/child-registry.ts) costs a run: the synchronous time of
// track() and of its removal (what a run's critical path pays), and the whole write + removal
// (done in the background while the child runs). Usage: npm run build && node bench/child-registry-cost.mjs [N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChildRegistry } from '../dist/store/child-registry.js';
import { selfIdentity } from '../dist/store/proc-reader.js';

const n = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(path.join(tmpdir(), 'child-registry-cost-'));
const registry = new ChildRegistry(dir, selfIdentity(), (m) => console.error(m));
const args = ['run', 'llama3.2', '--nowordwrap'];
let syncNs = 0n;
const samples = [];
let cpuUs = 0;
const wall = performance.now();
for (let i = 0; i < n; i += 1) {
  const cpu = process.cpuUsage();
  let t = process.hrtime.bigint();
  const done = registry.track(process.pid, 'ollama', args); // our own pid: /proc/<pid>/stat exists
  let took = process.hrtime.bigint() - t;
  await registry.idle(); // the write lands while "the child runs"
  t = process.hrtime.bigint();
  done();
  took += process.hrtime.bigint() - t;
  syncNs += took;
  samples.push(Number(took) / 1000);
  await registry.idle();
  const used = process.cpuUsage(cpu);
  cpuUs += used.user + used.system;
}
const wallMs = performance.now() - wall;
samples.sort((a, b) => a - b);
console.log(
  `${n} runs: on the run's path (synchronous): median ${samples[n >> 1].toFixed(1)} µs, mean ${(Number(syncNs) / n / 1000).toFixed(1)} µs/run; ` +
    `background write + removal: ${((wallMs * 1000) / n).toFixed(1)} µs wall, ${(cpuUs / n).toFixed(1)} µs CPU (all threads) per run`,
);
rmSync(dir, { recursive: true, force: true });
