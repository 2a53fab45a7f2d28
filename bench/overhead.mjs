// Benchmark 1: the spawn baselines, and the latency `ollama_run` adds over a direct spawn of the same fake.
//
// One server. Each round runs, in a shuffled order, one of each:
//   task   ollama_run with a task_id (rotating among TASK_IDS ids: the ledger transaction is measured)
//   none   ollama_run without a task_id
//   spawn  the same fake spawned directly with child_process.spawn (same argv, prompt on stdin)
//   execa  the same with execa's defaults (what execa costs over spawn)
//   runner the same through the server's own spawn function (runModelProcess from dist/: execa with
//          the server's lean options), outside the server: the floor the server keeps
//   ping   an MCP ping (the bare stdio JSON-RPC round trip, for the breakdown)
// so slow drifts of the machine hit every variant alike. The added latency is the median of the
// per-round differences (server call i minus direct spawn i). Every FLOOR_EVERY rounds the compiled
// posix_spawn driver (bench/spawn-floor.c) runs FLOOR_EVERY spawns of the same fake: the machine's floor.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import {
  ARGV_FILE_ENV,
  MODEL,
  baseEnv,
  execaDirect,
  makeTempDir,
  runnerDirect,
  removeTempDir,
  serverRunArgs,
  shuffle,
  spawnDirect,
  startServer,
  summarize,
} from './lib.mjs';

const PROMPT = 'Summarise in one sentence why bounded concurrency matters for local models.';
const TASK_IDS = 50;
const FLOOR_EVERY = 10;

/**
 * @param {{ fake: { bin: string, label: string }, floorBin: string | null, rounds: number, warmup: number }} options
 */
export async function measureOverhead({ fake, floorBin, rounds, warmup }) {
  const dir = makeTempDir('overhead');
  const argvFile = path.join(dir, 'argv');
  const env = baseEnv({ [ARGV_FILE_ENV]: argvFile }); // what the server hands the fake too (it passes its env on)
  const server = await startServer({
    bin: fake.bin,
    telemetryDir: path.join(dir, 'telemetry'),
    env: { [ARGV_FILE_ENV]: argvFile },
  });
  const samples = Object.fromEntries(
    ['task', 'none', 'spawn', 'execa', 'runner', 'ping', 'posix', 'taskServerSide', 'noneServerSide'].map((k) => [k, []]),
  );
  let taskCounter = 0;

  try {
    // The first run records the argv the server uses, so the baselines spawn exactly that.
    await server.run({ model: MODEL, prompt: PROMPT });
    const { args, source: argsSource } = await serverRunArgs(argvFile);

    // A server call, recorded with the part of its wall time outside the server's own duration_ms.
    const serverCall = (name, extra) => async (record) => {
      const t0 = performance.now();
      const metadata = await server.run({ model: MODEL, prompt: PROMPT, ...extra() });
      const wall = performance.now() - t0;
      if (!record) return;
      samples[name].push(wall);
      samples[`${name}ServerSide`].push(wall - metadata.duration_ms);
    };
    const timed = (name, call) => async (record) => {
      const t0 = performance.now();
      await call();
      if (record) samples[name].push(performance.now() - t0);
    };
    const variants = {
      task: serverCall('task', () => ({ task_id: `bench-task-${taskCounter++ % TASK_IDS}` })),
      none: serverCall('none', () => ({})),
      spawn: timed('spawn', () => spawnDirect(fake.bin, args, PROMPT, env)),
      execa: timed('execa', () => execaDirect(fake.bin, args, PROMPT, env)),
      runner: timed('runner', () => runnerDirect(fake.bin, args, PROMPT, env)),
      ping: timed('ping', () => server.client.ping()),
    };
    const started = performance.now();
    for (let round = 0; round < warmup + rounds; round += 1) {
      for (const name of shuffle(Object.keys(variants))) await variants[name](round >= warmup);
      if (floorBin && round >= warmup && (round - warmup) % FLOOR_EVERY === 0)
        samples.posix.push(...posixFloor(floorBin, [fake.bin, ...args], env));
    }
    const elapsedS = (performance.now() - started) / 1000;
    return { ...figures(samples, floorBin !== null), args, argsSource, rounds, elapsedS, serverStderr: server.stderr() };
  } finally {
    await server.close();
    removeTempDir(dir);
  }
}

/** FLOOR_EVERY posix_spawn runs of `command` by bench/spawn-floor.c, which times each itself (ms). */
function posixFloor(floorBin, command, env) {
  // Synchronous on purpose: nothing else is in flight between rounds.
  const result = spawnSync(floorBin, [String(FLOOR_EVERY), PROMPT, ...command], { env, encoding: 'utf8', timeout: 60_000 });
  if (result.status !== 0)
    throw new Error(`spawn-floor failed (${result.status ?? result.signal}): ${result.stderr.slice(-400)}`);
  return result.stdout.trim().split('\n').map(Number);
}

/**
 * Each variant's summary, and the paired ones: each round's server call minus the same round's direct
 * spawn, so slow drifts of the machine cancel.
 */
function figures(samples, withFloor) {
  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
  const pairedWith = (a, b) => summarize(samples[a].map((x, i) => x - samples[b][i]));
  return {
    ...s,
    posix: withFloor ? s.posix : null,
    paired: {
      task: pairedWith('task', 'spawn'),
      none: pairedWith('none', 'spawn'),
      execa: pairedWith('execa', 'spawn'),
      runner: pairedWith('runner', 'spawn'),
      taskOverRunner: pairedWith('task', 'runner'),
      noneOverRunner: pairedWith('none', 'runner'),
      taskOverExeca: pairedWith('task', 'execa'),
      noneOverExeca: pairedWith('none', 'execa'),
      taskOverNone: pairedWith('task', 'none'),
    },
  };
}
