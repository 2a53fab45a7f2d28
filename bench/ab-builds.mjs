// Per-call latency of this checkout's build next to another checkout's, on the same fake, with calls
// alternating between the two servers so slow drifts of the machine hit both alike: the way to show
// that a change costs a short call nothing (or what it costs).
//
//   npm run build && node bench/ab-builds.mjs <other checkout, built> [rounds] [NAME=value ...]
//
// NAME=value pairs go into this build's server environment only: the other checkout may be this one
// (`.`), to compare one build with and without a setting (e.g. OLLAMA_MCP_SHARED_QUEUE=0).
//
// Each round makes, in a shuffled order, one `ollama_run` without a task_id and one with a task_id
// (rotating among 50 ids) on each server. Reported: each build's p50 per variant and the paired
// median of (this build - other build), round by round.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MODEL, SERVER_ENTRY, fakeBinary, makeTempDir, removeTempDir, shuffle, startServer, summarize, ms } from './lib.mjs';

const [otherRoot, roundsArg, ...settings] = process.argv.slice(2);
if (!otherRoot || settings.some((s) => !/^[A-Z_][A-Z0-9_]*=/.test(s))) {
  console.error('usage: node bench/ab-builds.mjs <other checkout, built> [rounds] [NAME=value ...]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 400);
const warmup = 30;
const PROMPT = 'Summarise in one sentence why bounded concurrency matters for local models.';

const fake = fakeBinary(0);
const dir = makeTempDir('ab-builds');
const thisEnv = Object.fromEntries(settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]));
const builds = {
  this: { entry: SERVER_ENTRY, env: thisEnv },
  other: { entry: path.resolve(otherRoot, 'dist/cli.js'), env: {} },
};
for (const [name, build] of Object.entries(builds))
  build.server = await startServer({ bin: fake.bin, telemetryDir: path.join(dir, name), entry: build.entry, env: build.env });

const samples = {};
const record = (key, value) => (samples[key] ??= []).push(value);
let taskCounter = 0;
try {
  for (let round = 0; round < warmup + rounds; round += 1) {
    const taskId = `ab-task-${taskCounter++ % 50}`;
    const variants = Object.entries(builds).flatMap(([name, { server }]) => [
      [`${name}.none`, () => server.run({ model: MODEL, prompt: PROMPT })],
      [`${name}.task`, () => server.run({ model: MODEL, prompt: PROMPT, task_id: taskId })],
    ]);
    for (const [key, call] of shuffle(variants)) {
      const t0 = performance.now();
      await call();
      if (round >= warmup) record(key, performance.now() - t0);
    }
  }
} finally {
  for (const { server } of Object.values(builds)) await server.close();
  removeTempDir(dir);
}

console.log(
  `this:  ${builds.this.entry}\nother: ${builds.other.entry}\nfake:  ${fake.label}; ${rounds} rounds after ${warmup} warm-up`,
);
for (const variant of ['none', 'task']) {
  const mine = samples[`this.${variant}`];
  const theirs = samples[`other.${variant}`];
  const paired = summarize(mine.map((x, i) => x - theirs[i]));
  console.log(
    `ollama_run ${variant === 'none' ? 'without' : 'with'} task_id: p50 this ${ms(summarize(mine).p50)} ms, other ${ms(summarize(theirs).p50)} ms; paired median (this - other) ${ms(paired.p50)} ms`,
  );
}
