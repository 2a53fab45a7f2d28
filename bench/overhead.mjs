// Benchmark 1: the latency `ollama_run` adds over spawning the same CLI directly.
//
// One server per fake. Each round runs, in a shuffled order, one of each:
//   A  ollama_run with a task_id (rotating among TASK_IDS ids: the ledger transaction is measured)
//   A0 ollama_run without a task_id (no ledger write on success: only lock-free reads + the log line)
//   B  the same fake spawned directly with execa (same args, prompt on stdin via `input`)
//   P  an MCP ping (the bare stdio JSON-RPC round trip, for the breakdown)
// so slow drifts of the machine hit every variant alike.
import { execa } from 'execa';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { MODEL, RUN_ARGS, baseEnv, makeTempDir, removeTempDir, shuffle, startServer, summarize } from './lib.mjs';

const PROMPT = 'Summarise in one sentence why bounded concurrency matters for local models.';
const TASK_IDS = 50;

/**
 * @param {{ label: string, bin: string, rounds: number, warmup: number, cpuProfDir?: string }} options
 */
export async function measureOverhead({ label, bin, rounds, warmup, cpuProfDir }) {
  const dir = makeTempDir('overhead');
  const env = baseEnv(); // what the server hands the fake too (it passes its own env on)
  const nodeArgs = cpuProfDir
    ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, `--cpu-prof-name=server-${label.replace(/\W+/g, '-')}.cpuprofile`]
    : [];
  const server = await startServer({ bin, telemetryDir: path.join(dir, 'telemetry'), nodeArgs });
  const samples = { task: [], none: [], direct: [], ping: [], taskServerSide: [], noneServerSide: [] };
  let taskCounter = 0;

  const variants = {
    async task(record) {
      const taskId = `bench-task-${taskCounter++ % TASK_IDS}`;
      const t0 = performance.now();
      const metadata = await server.run({ model: MODEL, prompt: PROMPT, task_id: taskId });
      const wall = performance.now() - t0;
      if (record) {
        samples.task.push(wall);
        samples.taskServerSide.push(wall - metadata.duration_ms);
      }
    },
    async none(record) {
      const t0 = performance.now();
      const metadata = await server.run({ model: MODEL, prompt: PROMPT });
      const wall = performance.now() - t0;
      if (record) {
        samples.none.push(wall);
        samples.noneServerSide.push(wall - metadata.duration_ms);
      }
    },
    async direct(record) {
      const t0 = performance.now();
      const result = await execa(bin, RUN_ARGS, { input: PROMPT, reject: false, env, extendEnv: false });
      const wall = performance.now() - t0;
      if (result.exitCode !== 0 || !result.stdout.trim()) {
        throw new Error(`direct ${bin} failed: exit ${result.exitCode} ${result.signal ?? ''} ${result.stderr.slice(-300)}`);
      }
      if (record) samples.direct.push(wall);
    },
    async ping(record) {
      const t0 = performance.now();
      await server.client.ping();
      if (record) samples.ping.push(performance.now() - t0);
    },
  };

  try {
    const started = performance.now();
    for (let round = 0; round < warmup + rounds; round += 1) {
      for (const name of shuffle(Object.keys(variants))) await variants[name](round >= warmup);
    }
    const elapsedS = (performance.now() - started) / 1000;
    const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
    return {
      label,
      bin,
      rounds,
      warmup,
      elapsedS,
      task: s.task,
      none: s.none,
      direct: s.direct,
      ping: s.ping,
      taskServerSide: s.taskServerSide,
      noneServerSide: s.noneServerSide,
      added: {
        task: { p50: s.task.p50 - s.direct.p50, p95: s.task.p95 - s.direct.p95 },
        none: { p50: s.none.p50 - s.direct.p50, p95: s.none.p95 - s.direct.p95 },
      },
      // Each round's server call minus the same round's direct spawn, which cancels slow drifts
      // of the machine: a steadier estimate of the same thing on a shared machine.
      paired: {
        task: summarize(samples.task.map((x, i) => x - samples.direct[i])),
        none: summarize(samples.none.map((x, i) => x - samples.direct[i])),
      },
      serverStderr: server.stderr(),
    };
  } finally {
    await server.close();
    removeTempDir(dir);
  }
}
