// What recording a model process (store/processes/child-registry.ts) costs a run: the synchronous time of
// track() and of its removal (what a run's critical path pays), and the whole write + removal
// (done in the background while the child runs). Usage: npm run build && node bench/child-registry-cost.mjs [N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChildRegistry } from '../dist/store/processes/child-registry.js';
import { selfIdentity } from '../dist/store/processes/proc-reader.js';

const n = Number(process.argv[2] ?? 2000);
const dir = mkdtempSync(path.join(tmpdir(), 'child-registry-cost-'));
const registry = new ChildRegistry(dir, selfIdentity(), (m) => console.error(m), 0); // recorded at once: the write's cost
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

// Paired A/B: a run through runModelProcess with the record (ProcessHygiene.trackSpawns) against
// one without, spawning a process that exits at once (`true`): the median of per-pair differences.
const { runModelProcess } = await import('../dist/ollama/model-process.js');
const { ProcessHygiene } = await import('../dist/app/hygiene/process-hygiene.js');
const { loadConfig } = await import('../dist/config/config.js');
const pairs = Number(process.argv[3] ?? 300);
const abDir = mkdtempSync(path.join(tmpdir(), 'child-registry-ab-'));
const hygiene = new ProcessHygiene(loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: abDir }), (m) => console.error(m));
const tracked = hygiene.trackSpawns(runModelProcess);
const request = {
  bin: 'true',
  args,
  prompt: 'hi',
  env: { PATH: process.env.PATH },
  timeoutMs: 10_000,
  startTimeoutMs: 10_000,
  killGraceMs: 1000,
  maxOutputBytes: 1 << 20,
};
const diffs = [];
for (let i = 0; i < pairs; i += 1) {
  const order = i % 2 === 0 ? [tracked, runModelProcess] : [runModelProcess, tracked];
  const took = new Map();
  for (const spawn of order) {
    const t = performance.now();
    await spawn(request);
    took.set(spawn, performance.now() - t);
  }
  diffs.push((took.get(tracked) - took.get(runModelProcess)) * 1000);
  await hygiene.stop(); // the removals land before the next pair
}
diffs.sort((a, b) => a - b);
console.log(
  `${pairs} paired runs of \`true\`: recorded minus not recorded: median ${diffs[pairs >> 1].toFixed(1)} µs (p25 ${diffs[pairs >> 2].toFixed(1)}, p75 ${diffs[(3 * pairs) >> 2].toFixed(1)})`,
);
rmSync(abDir, { recursive: true, force: true });
