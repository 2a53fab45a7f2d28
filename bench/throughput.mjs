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

  const direct = async (runOnce, count = runs) => {
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
  };

  try {
    // Warm-up: JIT, the first prune, the state files' creation; the first run records the argv.
    await Promise.all(
      Array.from({ length: concurrency * 2 }, (_, i) => server.run({ model: MODEL, prompt: PROMPT, task_id: `warm-${i}` })),
    );
    const { args, source: argsSource } = await serverRunArgs(argvFile);
    const ways = {
      server: viaServer,
      spawn: () => direct(() => spawnDirect(bin, args, PROMPT, env)),
      execa: () => direct(() => execaDirect(bin, args, PROMPT, env)),
      runner: () => direct(() => runnerDirect(bin, args, PROMPT, env)),
    };
    await direct(() => spawnDirect(bin, args, PROMPT, env), concurrency * 2);
    await direct(() => execaDirect(bin, args, PROMPT, env), concurrency * 2);
    await direct(() => runnerDirect(bin, args, PROMPT, env), concurrency * 2);

    const walls = { server: [], spawn: [], execa: [], runner: [] };
    const spawnMs = { server: [], spawn: [], execa: [], runner: [] };
    let maxQueueMs = 0;
    const names = Object.keys(ways);
    for (let rep = 0; rep < reps; rep += 1) {
      // Rotate which goes first so none always runs on a machine another just warmed.
      const order = names.map((_, i) => names[(i + rep) % names.length]);
      for (const which of order) {
        const r = await ways[which](rep);
        walls[which].push(r.wall);
        spawnMs[which].push(...r.durations);
        if (which === 'server') maxQueueMs = Math.max(maxQueueMs, r.maxQueueMs);
      }
    }
    const ideal = (runs / concurrency) * modelMs;
    const wall = Object.fromEntries(names.map((n) => [n, summarize(walls[n]).p50]));
    return {
      runs,
      concurrency,
      modelMs,
      reps,
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
