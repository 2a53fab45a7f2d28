// The server's own CPU time per call, by variant: a figure that moves much less on a busy machine
// than wall-clock latencies do. Reads /proc/<pid>/task/*/schedstat (ns, every thread of the server:
// the main thread, libuv's pool, V8's helpers) around blocks of sequential calls.
//
//   npm run build && node bench/cpu-per-call.mjs [calls=400] [--cpu-prof DIR] [--ab OTHER_ROOT]
//
// `--ab OTHER_ROOT` also starts OTHER_ROOT/dist/cli.js (another build of the server, e.g. a copy of
// the previous commit's dist/ with package.json beside it and node_modules linked) and interleaves
// the two block by block, so both meet the same machine: then compare the two servers' medians.
// Linux only (/proc). The fake is bench/fake.c (0 ms), compiled into bench/.out/.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  ARGV_FILE_ENV,
  MODEL,
  SERVER_ENTRY,
  fakeBinary,
  makeTempDir,
  removeAllTempDirs,
  shuffle,
  startServer,
  summarize,
} from './lib.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const index = args.indexOf(name);
  return index === -1 ? null : args.splice(index, 2)[1];
};
const cpuProfDir = option('--cpu-prof');
const otherRoot = option('--ab');
const calls = Number(args[0] ?? 400);
const BLOCK = 20;
const PROMPT = 'Summarise in one sentence why bounded concurrency matters for local models.';

/** CPU ns used so far by every thread of `pid`. */
function cpuNs(pid) {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return total;
}

const fake = fakeBinary(0);
const builds = { this: SERVER_ENTRY, ...(otherRoot ? { other: path.resolve(otherRoot, 'dist/cli.js') } : {}) };
const servers = {};
try {
  for (const [name, entry] of Object.entries(builds)) {
    const dir = makeTempDir(`cpu-${name}`);
    const nodeArgs = cpuProfDir
      ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=server-${name}.cpuprofile`]
      : [];
    const telemetryDir = path.join(dir, 'telemetry');
    servers[name] = await startServer({
      bin: fake.bin,
      telemetryDir,
      env: { [ARGV_FILE_ENV]: path.join(dir, 'argv') },
      nodeArgs,
      entry,
    });
  }
  let taskCounter = 0;
  const variants = {
    task: (s) => s.run({ model: MODEL, prompt: PROMPT, task_id: `bench-task-${taskCounter++ % 50}` }),
    none: (s) => s.run({ model: MODEL, prompt: PROMPT }),
    ping: (s) => s.client.ping(),
  };
  const keys = Object.keys(servers).flatMap((server) => Object.keys(variants).map((variant) => `${server}:${variant}`));
  const cpu = Object.fromEntries(keys.map((k) => [k, []]));
  const wall = Object.fromEntries(keys.map((k) => [k, []]));
  for (const server of Object.values(servers))
    for (let i = 0; i < 30; i += 1) for (const run of Object.values(variants)) await run(server);
  for (let done = 0; done < calls; done += BLOCK) {
    for (const key of shuffle(keys)) {
      const [serverName, variant] = key.split(':');
      const server = servers[serverName];
      const before = cpuNs(server.pid);
      for (let i = 0; i < BLOCK; i += 1) {
        const t0 = performance.now();
        await variants[variant](server);
        wall[key].push(performance.now() - t0);
      }
      cpu[key].push((cpuNs(server.pid) - before) / BLOCK / 1000);
    }
  }
  process.stdout.write(`server CPU per call (all threads; median of blocks of ${BLOCK}), ${calls} calls each, ${fake.label}\n`);
  for (const [name, entry] of Object.entries(builds)) process.stdout.write(`  ${name}: ${entry}\n`);
  for (const key of keys) {
    const c = summarize(cpu[key]);
    const w = summarize(wall[key]);
    process.stdout.write(
      `  ${key.padEnd(11)} cpu p50 ${c.p50.toFixed(0).padStart(5)} us (min ${c.min.toFixed(0).padStart(5)})   client wall p50 ${w.p50.toFixed(3)} ms\n`,
    );
  }
} finally {
  await Promise.allSettled(Object.values(servers).map((s) => s.close()));
  removeAllTempDirs();
}
