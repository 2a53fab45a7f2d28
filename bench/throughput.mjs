// Benchmark 2: 200 runs of a 100 ms model, all issued at once by one client, server at
// OLLAMA_MCP_CONCURRENCY=8; versus the same 200 spawns done directly with execa, 8 at a time.
import { execa } from 'execa';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { MODEL, RUN_ARGS, baseEnv, makeTempDir, removeTempDir, startServer, summarize } from './lib.mjs';

const PROMPT = 'Classify this ticket: the printer on floor 3 is out of toner.';

/**
 * @param {{ bin: string, runs: number, concurrency: number, modelMs: number, reps: number }} options
 */
export async function measureThroughput({ bin, runs, concurrency, modelMs, reps }) {
  const dir = makeTempDir('throughput');
  const env = baseEnv();
  const server = await startServer({
    bin,
    telemetryDir: path.join(dir, 'telemetry'),
    env: { OLLAMA_MCP_CONCURRENCY: String(concurrency) },
  });

  const viaServer = async (rep) => {
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: runs }, (_, i) => server.run({ model: MODEL, prompt: PROMPT, task_id: `burst-${rep}-${i}` })),
    );
    const wall = performance.now() - t0;
    return { wall, maxQueueMs: Math.max(...results.map((m) => m.queue_ms)), durations: results.map((m) => m.duration_ms) };
  };

  const direct = async (count = runs) => {
    let next = 0;
    const durations = [];
    const worker = async () => {
      while (next < count) {
        next += 1;
        const t = performance.now();
        const result = await execa(bin, RUN_ARGS, { input: PROMPT, reject: false, env, extendEnv: false });
        if (result.exitCode !== 0) throw new Error(`direct ${bin} failed: exit ${result.exitCode} ${result.stderr.slice(-300)}`);
        durations.push(performance.now() - t);
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { wall: performance.now() - t0, durations };
  };

  try {
    // Warm-up: JIT, the first prune, the state files' creation.
    await Promise.all(
      Array.from({ length: concurrency * 2 }, (_, i) => server.run({ model: MODEL, prompt: PROMPT, task_id: `warm-${i}` })),
    );
    await direct(concurrency * 2);

    const serverWalls = [];
    const directWalls = [];
    const serverSpawnMs = [];
    const directSpawnMs = [];
    let maxQueueMs = 0;
    for (let rep = 0; rep < reps; rep += 1) {
      // Alternate which goes first so neither always runs on a machine the other just warmed.
      const order = rep % 2 === 0 ? ['server', 'direct'] : ['direct', 'server'];
      for (const which of order) {
        if (which === 'server') {
          const r = await viaServer(rep);
          serverWalls.push(r.wall);
          serverSpawnMs.push(...r.durations);
          maxQueueMs = Math.max(maxQueueMs, r.maxQueueMs);
        } else {
          const r = await direct();
          directWalls.push(r.wall);
          directSpawnMs.push(...r.durations);
        }
      }
    }
    const ideal = (runs / concurrency) * modelMs;
    const serverWall = summarize(serverWalls).p50;
    const directWall = summarize(directWalls).p50;
    return {
      runs,
      concurrency,
      modelMs,
      reps,
      idealMs: ideal,
      serverWalls,
      directWalls,
      serverWall,
      directWall,
      efficiency: ideal / serverWall,
      directEfficiency: ideal / directWall,
      relative: directWall / serverWall,
      serverSpawn: summarize(serverSpawnMs),
      directSpawn: summarize(directSpawnMs),
      maxQueueMs,
      serverStderr: server.stderr(),
    };
  } finally {
    await server.close();
    removeTempDir(dir);
  }
}
