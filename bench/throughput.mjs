// Benchmark 2: 200 runs of a 100 ms model, all issued at once by one client, server at
// OLLAMA_MCP_CONCURRENCY=8; versus the same 200 runs of the same fake done directly, 8 at a time,
// with child_process.spawn (the baseline of the target), with execa's defaults, and with the server's
// own spawn function (runModelProcess: execa as the server uses it, the floor the server keeps).
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import {
  ARGV_FILE_ENV,
  MODEL,
  baseEnv,
  execaDirect,
  makeTempDir,
  removeTempDir,
  runnerDirect,
  serverRunArgs,
  spawnDirect,
  startServer,
  summarize,
} from './lib.mjs';

const PROMPT = 'Classify this ticket: the printer on floor 3 is out of toner.';

/**
 * @param {{ bin: string, runs: number, concurrency: number, modelMs: number, reps: number }} options
 */
export async function measureThroughput({ bin, runs, concurrency, modelMs, reps }) {
  const dir = makeTempDir('throughput');
  const argvFile = path.join(dir, 'argv');
  const env = baseEnv({ [ARGV_FILE_ENV]: argvFile });
  const server = await startServer({
    bin,
    telemetryDir: path.join(dir, 'telemetry'),
    env: { OLLAMA_MCP_CONCURRENCY: String(concurrency), [ARGV_FILE_ENV]: argvFile },
  });

  const viaServer = async (rep) => {
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: runs }, (_, i) => server.run({ model: MODEL, prompt: PROMPT, task_id: `burst-${rep}-${i}` })),
    );
    const wall = performance.now() - t0;
    return { wall, maxQueueMs: Math.max(...results.map((m) => m.queue_ms)), durations: results.map((m) => m.duration_ms) };
  };

  try {
    // Warm-up: JIT, the first prune, the state files' creation; the first run records the argv.
    await Promise.all(
      Array.from({ length: concurrency * 2 }, (_, i) => server.run({ model: MODEL, prompt: PROMPT, task_id: `warm-${i}` })),
    );
    const { args, source: argsSource } = await serverRunArgs(argvFile);
    const ways = { server: viaServer };
    for (const [name, spawnOnce] of Object.entries({ spawn: spawnDirect, execa: execaDirect, runner: runnerDirect })) {
      ways[name] = (_rep, count = runs) => inParallel(() => spawnOnce(bin, args, PROMPT, env), count, concurrency);
      await ways[name](0, concurrency * 2); // warm-up
    }

    const names = Object.keys(ways);
    const { walls, spawnMs, maxQueueMs } = await rotated(ways, reps);
    const ideal = (runs / concurrency) * modelMs;
    const wall = Object.fromEntries(names.map((n) => [n, summarize(walls[n]).p50]));
    return {
      runs,
      concurrency,
      modelMs,
      args,
      argsSource,
      idealMs: ideal,
      walls,
      wall,
      efficiency: Object.fromEntries(names.map((n) => [n, ideal / wall[n]])),
      // Runs per second relative to the direct child_process.spawn baseline (the target's measure).
      relative: wall.spawn / wall.server,
      relativeExeca: wall.spawn / wall.execa,
      relativeRunner: wall.spawn / wall.runner,
      spawnMs: Object.fromEntries(names.map((n) => [n, summarize(spawnMs[n])])),
      maxQueueMs,
      serverStderr: server.stderr(),
    };
  } finally {
    await server.close();
    removeTempDir(dir);
  }
}

/** `count` runs of `runOnce`, `concurrency` at a time: the wall time of all, and of each. */
async function inParallel(runOnce, count, concurrency) {
  let next = 0;
  const durations = [];
  const worker = async () => {
    while (next < count) {
      next += 1;
      const t = performance.now();
      await runOnce();
      durations.push(performance.now() - t);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { wall: performance.now() - t0, durations };
}

/** Each way run `reps` times, which goes first rotated so none always runs on a machine another just warmed. */
async function rotated(ways, reps) {
  const names = Object.keys(ways);
  const walls = Object.fromEntries(names.map((n) => [n, []]));
  const spawnMs = Object.fromEntries(names.map((n) => [n, []]));
  let maxQueueMs = 0;
  for (let rep = 0; rep < reps; rep += 1) {
    for (const which of names.map((_, i) => names[(i + rep) % names.length])) {
      const r = await ways[which](rep);
      walls[which].push(r.wall);
      spawnMs[which].push(...r.durations);
      if (which === 'server') maxQueueMs = Math.max(maxQueueMs, r.maxQueueMs);
    }
  }
  return { walls, spawnMs, maxQueueMs };
}
