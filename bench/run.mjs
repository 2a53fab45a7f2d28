// `npm run bench`: the three benchmarks in one run, figures to stdout and to bench/RESULTS.md.
// Exit code 0 when every benchmark ran (a missed target is reported as FAIL, not as an error),
// non-zero when something actually went wrong.
//
// Options (environment):
//   BENCH_QUICK=1          tiny sample counts, for checking the harness itself (figures meaningless)
//   BENCH_CPU_PROF=<dir>   run the overhead servers under `node --cpu-prof`, profiles written to <dir>
//   BENCH_NO_WRITE=1       do not rewrite bench/RESULTS.md
//   BENCH_RESULTS_FILE=<f> write the Markdown there instead (also in QUICK mode)
//   BENCH_WAIT_IDLE=<s>    first wait up to <s> seconds for the CPUs to be idle (a shared machine)
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  BENCH_DIR,
  NODE_FAKE,
  SH_FAKE,
  SH_FAKE_100MS,
  fake100ms,
  closeAllServers,
  cpuBusyPercent,
  cpuTicks,
  ensureExecutable,
  machineInfo,
  ms,
  removeAllTempDirs,
} from './lib.mjs';
import { measureOverhead } from './overhead.mjs';
import { measureState } from './state.mjs';
import { measureThroughput } from './throughput.mjs';
import { measureReportVsJq } from './report-vs-jq.mjs';

const QUICK = process.env.BENCH_QUICK === '1';
const CPU_PROF = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
const WATCHDOG_MS = 6 * 60 * 1000;
const IDLE_BUSY_PCT = 15;

const TARGETS = {
  overheadP50: 5, // ms added at p50, task_id path
  overheadStretch: 3,
  efficiency: 0.9,
  stateP50: 5,
};

const PLAN = QUICK
  ? { nodeRounds: 10, shRounds: 20, warmup: 3, runs: 40, reps: 1, tasks: 10_000, transactions: 50, stateWarmup: 5 }
  : { nodeRounds: 200, shRounds: 400, warmup: 20, runs: 200, reps: 3, tasks: 10_000, transactions: 500, stateWarmup: 50 };

const say = (line = '') => process.stdout.write(`${line}\n`);

/** Share of the machine's CPU that other processes used while `fn` ran (its children are reaped by then). */
async function withNoise(fn) {
  const t0 = performance.now();
  const before = cpuTicks();
  const result = await fn();
  const after = cpuTicks();
  const seconds = (performance.now() - t0) / 1000;
  let otherCpuPct = null;
  if (before && after && seconds > 0) {
    const other = after.machineBusy - before.machineBusy - (after.ours - before.ours);
    otherCpuPct = Math.max(0, (100 * other) / (seconds * 100 * os.availableParallelism()));
  }
  return Object.assign(result, { otherCpuPct });
}
const noise = (x) => (x.otherCpuPct === null ? 'n/a' : `${x.otherCpuPct.toFixed(0)}%`);
const pass = (ok) => (ok ? 'PASS' : 'FAIL');

async function main() {
  ensureExecutable(SH_FAKE);
  ensureExecutable(SH_FAKE_100MS);
  ensureExecutable(NODE_FAKE);

  // The figures mean little if something else is using the CPUs: measure it and say so.
  const waitIdleS = Number(process.env.BENCH_WAIT_IDLE ?? 0);
  if (waitIdleS > 0) {
    const deadline = performance.now() + waitIdleS * 1000;
    let busy;
    while ((busy = await cpuBusyPercent(2000)) !== null && busy > IDLE_BUSY_PCT && performance.now() < deadline) {
      say(`waiting for an idle machine (CPUs ${busy.toFixed(0)}% busy) ...`);
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
  }
  // Started after the idle wait: it bounds the benchmarks themselves.
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: watchdog: still running after ${WATCHDOG_MS / 1000} s, giving up\n`);
    void closeAllServers().finally(() => {
      removeAllTempDirs();
      process.exit(3);
    });
  }, WATCHDOG_MS);
  watchdog.unref();

  const machine = machineInfo();
  const busyBefore = await cpuBusyPercent(1500);
  machine.busyBefore = busyBefore === null ? 'n/a' : `${busyBefore.toFixed(0)}%`;
  const started = performance.now();
  const ticksBefore = cpuTicks();
  say(`ollama-runner-mcp benchmarks${QUICK ? ' (QUICK: figures meaningless)' : ''}`);
  say(`machine: ${machine.nproc} cpu (${machine.cpuModel}), ${machine.memory}, node ${machine.node}, ${machine.os}`);
  say(`load average at start: ${machine.loadavg}; CPU busy in the 1.5 s before start: ${machine.busyBefore}`);
  if (busyBefore !== null && busyBefore > IDLE_BUSY_PCT)
    say(`WARNING: the machine is not idle (${machine.busyBefore} busy before start); figures will be noisy`);
  say();

  // ---------------------------------------------------------------- 1. overhead
  say(`[1/4] overhead: ${PLAN.nodeRounds} + ${PLAN.shRounds} interleaved rounds after ${PLAN.warmup} warm-up rounds ...`);
  const overhead = [];
  overhead.push(
    await withNoise(() =>
      measureOverhead({
        label: 'node fake (test/fixtures/fake-ollama.mjs)',
        bin: NODE_FAKE,
        rounds: PLAN.nodeRounds,
        warmup: PLAN.warmup,
        cpuProfDir: CPU_PROF,
      }),
    ),
  );
  printOverhead(overhead.at(-1));
  overhead.push(
    await withNoise(() =>
      measureOverhead({
        label: 'minimal sh fake (bench/fake-min.sh)',
        bin: SH_FAKE,
        rounds: PLAN.shRounds,
        warmup: PLAN.warmup,
        cpuProfDir: CPU_PROF,
      }),
    ),
  );
  printOverhead(overhead.at(-1));

  // ---------------------------------------------------------------- 2. throughput
  const fake = fake100ms();
  say(`[2/4] throughput: ${PLAN.runs} runs of a 100 ms ${fake.label}, concurrency 8, ${PLAN.reps} rep(s) each way ...`);
  const throughput = await withNoise(() =>
    measureThroughput({ bin: fake.bin, runs: PLAN.runs, concurrency: 8, modelMs: 100, reps: PLAN.reps }),
  );
  throughput.fakeLabel = fake.label;
  printThroughput(throughput);

  // ---------------------------------------------------------------- 3. state
  say(`[3/4] state: ${PLAN.tasks} tasks, ${PLAN.transactions} transactions per mode ...`);
  const state = await withNoise(() =>
    measureState({ tasks: PLAN.tasks, transactions: PLAN.transactions, warmup: PLAN.stateWarmup }),
  );
  printState(state);

  // ---------------------------------------------------------------- 4. report vs jq
  const reportLines = QUICK ? 50_000 : 1_000_000;
  say(`[4/4] report --json over a generated ${reportLines.toLocaleString('en-US')}-line runs.jsonl, side by side with jq ...`);
  const report = await withNoise(() => measureReportVsJq({ lines: reportLines }));
  say(describeReport(report));

  const totalS = (performance.now() - started) / 1000;
  machine.loadavgEnd = machineInfo().loadavg;
  const ticksAfter = cpuTicks();
  if (ticksBefore && ticksAfter) {
    // Everything this run started has exited and been reaped by now, so its CPU is in `ours`.
    const other = ticksAfter.machineBusy - ticksBefore.machineBusy - (ticksAfter.ours - ticksBefore.ours);
    const capacity = totalS * 100 * Number(machine.nproc) || 1; // USER_HZ is 100 on Linux
    machine.otherCpu = `${Math.max(0, (100 * other) / capacity).toFixed(0)}% of the machine`;
    machine.ownCpu = `${((100 * (ticksAfter.ours - ticksBefore.ours)) / capacity).toFixed(0)}% of the machine`;
  } else {
    machine.otherCpu = machine.ownCpu = 'n/a';
  }
  const table = summaryTable(overhead, throughput, state, report);
  say('Summary');
  say(table);
  say();
  say(
    `total bench time: ${totalS.toFixed(1)} s; CPU used by the bench and its children: ${machine.ownCpu}, by other processes: ${machine.otherCpu}`,
  );

  for (const o of overhead)
    if (o.serverStderr.trim()) say(`note: server stderr (${o.label}): ${o.serverStderr.trim().slice(0, 500)}`);
  if (throughput.serverStderr.trim()) say(`note: server stderr (throughput): ${throughput.serverStderr.trim().slice(0, 500)}`);

  const resultsFile = process.env.BENCH_RESULTS_FILE;
  if (process.env.BENCH_NO_WRITE !== '1' && (!QUICK || resultsFile)) {
    const file = resultsFile ? path.resolve(resultsFile) : path.join(BENCH_DIR, 'RESULTS.md');
    writeFileSync(file, renderMarkdown({ machine, overhead, throughput, state, report, table, totalS }));
    say(`wrote ${path.relative(process.cwd(), file)}`);
  }
  clearTimeout(watchdog);
}

// ------------------------------------------------------------------------------------ printing

function printOverhead(o) {
  say(`  ${o.label}: ${o.rounds} rounds in ${o.elapsedS.toFixed(1)} s; other processes used ${noise(o)} of the CPUs meanwhile`);
  say(`    direct execa spawn       p50 ${ms(o.direct.p50)}  p95 ${ms(o.direct.p95)} ms`);
  say(
    `    ollama_run + task_id     p50 ${ms(o.task.p50)}  p95 ${ms(o.task.p95)} ms   added p50 ${ms(o.added.task.p50)}  p95 ${ms(o.added.task.p95)} ms`,
  );
  say(
    `    ollama_run, no task_id   p50 ${ms(o.none.p50)}  p95 ${ms(o.none.p95)} ms   added p50 ${ms(o.added.none.p50)}  p95 ${ms(o.added.none.p95)} ms`,
  );
  say(`    MCP ping round trip      p50 ${ms(o.ping.p50)}  p95 ${ms(o.ping.p95)} ms`);
  say(
    `    paired (round by round) server - direct, median: task_id ${ms(o.paired.task.p50)}, no task_id ${ms(o.paired.none.p50)} ms`,
  );
  say(`    wall - server's duration_ms: task_id p50 ${ms(o.taskServerSide.p50)}, no task_id p50 ${ms(o.noneServerSide.p50)} ms`);
  say();
}

function printThroughput(t) {
  say(
    `  ideal ${t.runs}/${t.concurrency} x ${t.modelMs} ms = ${(t.idealMs / 1000).toFixed(2)} s; other processes used ${noise(t)} of the CPUs meanwhile`,
  );
  say(
    `  server  wall ${(t.serverWall / 1000).toFixed(3)} s (reps: ${t.serverWalls.map((w) => (w / 1000).toFixed(3)).join(', ')})  efficiency ${t.efficiency.toFixed(3)}`,
  );
  say(
    `  direct  wall ${(t.directWall / 1000).toFixed(3)} s (reps: ${t.directWalls.map((w) => (w / 1000).toFixed(3)).join(', ')})  efficiency ${t.directEfficiency.toFixed(3)}`,
  );
  say(`  server relative to direct: ${t.relative.toFixed(3)}`);
  say(
    `  per-spawn time: server's duration_ms p50 ${ms(t.serverSpawn.p50, 0)} p95 ${ms(t.serverSpawn.p95, 0)}; direct p50 ${ms(t.directSpawn.p50, 1)} p95 ${ms(t.directSpawn.p95, 1)} ms; longest queue_ms ${t.maxQueueMs}`,
  );
  say();
}

function printState(s) {
  say(`  other processes used ${noise(s)} of the CPUs meanwhile`);
  say(`  seeded ${s.tasks} tasks in ${ms(s.seedMs, 0)} ms (ledger ${(s.ledgerBytes / 1024).toFixed(0)} KiB in 64 shards)`);
  say(`  warm       p50 ${ms(s.warm.p50, 3)}  p95 ${ms(s.warm.p95, 3)} ms`);
  say(
    `  cold       p50 ${ms(s.cold.p50, 3)}  p95 ${ms(s.cold.p95, 3)} ms  (+ new StateStore() p50 ${ms(s.construct.p50, 3)} ms)`,
  );
  say(
    `  contended  p50 ${ms(s.contended.p50, 3)}  p95 ${ms(s.contended.p95, 3)} ms  (${s.contendedTxPerS.toFixed(0)} tx/s here, ${s.hammerTxPerS.toFixed(0)} tx/s in the other process)`,
  );
  say();
}

function summaryTable(overhead, t, s, r) {
  const [nodeFake, shFake] = overhead;
  const rows = [
    ['Figure', 'Measured', 'Target', 'Result'],
    [
      'Overhead, node fake, task_id: added p50 / p95',
      `${ms(nodeFake.added.task.p50)} / ${ms(nodeFake.added.task.p95)} ms`,
      `p50 <= ${TARGETS.overheadP50} ms (stretch <= ${TARGETS.overheadStretch})`,
      verdictOverhead(nodeFake.added.task.p50),
    ],
    [
      'Overhead, node fake, no task_id: added p50 / p95',
      `${ms(nodeFake.added.none.p50)} / ${ms(nodeFake.added.none.p95)} ms`,
      `p50 <= ${TARGETS.overheadP50} ms (stretch <= ${TARGETS.overheadStretch})`,
      verdictOverhead(nodeFake.added.none.p50),
    ],
    [
      'Overhead, minimal sh fake, task_id: added p50 / p95',
      `${ms(shFake.added.task.p50)} / ${ms(shFake.added.task.p95)} ms`,
      `p50 <= ${TARGETS.overheadP50} ms (stretch <= ${TARGETS.overheadStretch})`,
      verdictOverhead(shFake.added.task.p50),
    ],
    [
      'Overhead, minimal sh fake, no task_id: added p50 / p95',
      `${ms(shFake.added.none.p50)} / ${ms(shFake.added.none.p95)} ms`,
      `p50 <= ${TARGETS.overheadP50} ms (stretch <= ${TARGETS.overheadStretch})`,
      verdictOverhead(shFake.added.none.p50),
    ],
    [
      'Overhead, paired median (server - direct, same round), task_id / no task_id: node fake',
      `${ms(nodeFake.paired.task.p50)} / ${ms(nodeFake.paired.none.p50)} ms`,
      'info (steadier estimate)',
      'info',
    ],
    [
      'Overhead, paired median (server - direct, same round), task_id / no task_id: sh fake',
      `${ms(shFake.paired.task.p50)} / ${ms(shFake.paired.none.p50)} ms`,
      'info (steadier estimate)',
      'info',
    ],
    [
      `Throughput, ${t.runs} x ${t.modelMs} ms fake at concurrency ${t.concurrency}: efficiency (ideal / wall)`,
      `${t.efficiency.toFixed(3)} (wall ${(t.serverWall / 1000).toFixed(3)} s, ideal ${(t.idealMs / 1000).toFixed(2)} s)`,
      `>= ${TARGETS.efficiency}`,
      pass(t.efficiency >= TARGETS.efficiency),
    ],
    [
      `Throughput reference: direct execa, ${t.concurrency} at a time (no server)`,
      `${t.directEfficiency.toFixed(3)} (wall ${(t.directWall / 1000).toFixed(3)} s)`,
      'info (practical ceiling)',
      'info',
    ],
    ['Throughput: server relative to direct (direct wall / server wall)', t.relative.toFixed(3), 'info', 'info'],
    [
      `State, ${s.tasks} tasks: warm transaction p50 / p95`,
      `${ms(s.warm.p50, 3)} / ${ms(s.warm.p95, 3)} ms`,
      `p50 <= ${TARGETS.stateP50} ms`,
      pass(s.warm.p50 <= TARGETS.stateP50),
    ],
    [
      'State: cold transaction (fresh StateStore each) p50 / p95',
      `${ms(s.cold.p50, 3)} / ${ms(s.cold.p95, 3)} ms`,
      'info',
      'info',
    ],
    [
      'State: warm transaction while a 2nd process hammers, p50 / p95',
      `${ms(s.contended.p50, 3)} / ${ms(s.contended.p95, 3)} ms`,
      'info',
      'info',
    ],
    [
      `report --json, ${r.lines.toLocaleString('en-US')} lines: time / peak RSS`,
      `${(r.report.wallMs / 1000).toFixed(2)} s / ${r.report.rssMb.toFixed(0)} MB`,
      'RSS < 200 MB',
      pass(r.report.rssMb < 200),
    ],
    [
      'report vs jq (same per-model counts and p95): speed-up',
      r.jq
        ? `${(r.jq.wallMs / r.report.wallMs).toFixed(1)}x (jq ${(r.jq.wallMs / 1000).toFixed(2)} s, ${r.jq.rssMb.toFixed(0)} MB)`
        : 'jq not installed',
      '>= 3x',
      r.jq ? pass(r.jq.wallMs / r.report.wallMs >= 3 && r.agree) : 'n/a',
    ],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r) => `| ${r.map((cell, c) => cell.padEnd(widths[c])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

function verdictOverhead(added) {
  if (added <= TARGETS.overheadStretch) return 'PASS (stretch met)';
  return pass(added <= TARGETS.overheadP50);
}

function describeReport(r) {
  const head = `report --json: ${(r.report.wallMs / 1000).toFixed(2)} s, peak RSS ${r.report.rssMb.toFixed(0)} MB (${r.report.rssSource}); ${(r.bytes / 1048576).toFixed(0)} MiB, generated in ${(r.gen.ms / 1000).toFixed(1)} s`;
  if (!r.jq) return `${head}; jq not installed (apt-get install jq) so no comparison`;
  const agree = r.agree
    ? `per-model counts agree, p95 within ${(100 * r.maxP95Error).toFixed(2)}%`
    : `MISMATCH: ${r.mismatches.slice(0, 3).join('; ')}`;
  return `${head}\njq: ${(r.jq.wallMs / 1000).toFixed(2)} s, peak RSS ${r.jq.rssMb.toFixed(0)} MB; ${agree}`;
}

function renderMarkdown({ machine, overhead, throughput: t, state: s, report: r, table, totalS }) {
  const o = overhead;
  const overheadRows = o
    .map((x) =>
      [
        `| ${x.label} | direct execa | ${ms(x.direct.p50)} | ${ms(x.direct.p95)} | | |`,
        `| | ollama_run + task_id | ${ms(x.task.p50)} | ${ms(x.task.p95)} | ${ms(x.added.task.p50)} | ${ms(x.added.task.p95)} |`,
        `| | ollama_run, no task_id | ${ms(x.none.p50)} | ${ms(x.none.p95)} | ${ms(x.added.none.p50)} | ${ms(x.added.none.p95)} |`,
        `| | MCP ping (stdio round trip only) | ${ms(x.ping.p50)} | ${ms(x.ping.p95)} | | |`,
      ].join('\n'),
    )
    .join('\n');
  return `# Benchmark results

Generated by \`npm run bench\` (\`npm run build && node bench/run.mjs\`) on ${machine.date}. Do not edit by hand: every run rewrites this file.

## Machine

| | |
|---|---|
| CPUs (\`nproc\`) | ${machine.nproc} |
| CPU model | ${machine.cpuModel} |
| Memory | ${machine.memory} |
| Node | ${machine.node} |
| OS | ${machine.os} |
| Load average at start / end | ${machine.loadavg} / ${machine.loadavgEnd} |
| CPU busy in the 1.5 s before start | ${machine.busyBefore} |
| CPU used during the run by the bench (and its children) / by other processes | ${machine.ownCpu} / ${machine.otherCpu} |
| Date | ${machine.date} |
| Command | \`npm run bench\` |
| Total bench time | ${totalS.toFixed(1)} s |

## Summary

${table}

## 1. Overhead of \`ollama_run\` over a direct spawn (ms)

| Fake | Path | p50 | p95 | added p50 | added p95 |
|---|---|---|---|---|---|
${overheadRows}

Samples: ${o[0].rounds} rounds with the node fake, ${o[1].rounds} with the sh fake, after ${o[0].warmup} warm-up rounds each. Other processes used ${noise(o[0])} / ${noise(o[1])} of the CPUs meanwhile.
"added" is the server path's percentile minus the direct spawn's percentile (a difference of percentiles, not a percentile of differences).
Median of the paired differences (each round's server call minus the same round's direct spawn, which cancels the machine's drifts): node fake ${ms(o[0].paired.task.p50)} ms with task_id, ${ms(o[0].paired.none.p50)} ms without; sh fake ${ms(o[1].paired.task.p50)} / ${ms(o[1].paired.none.p50)} ms.
Wall time minus the server's own \`duration_ms\` for the spawn (p50): node fake ${ms(o[0].taskServerSide.p50)} ms with task_id, ${ms(o[0].noneServerSide.p50)} ms without; sh fake ${ms(o[1].taskServerSide.p50)} / ${ms(o[1].noneServerSide.p50)} ms.

## 2. Throughput: ${t.runs} runs of a ${t.modelMs} ms model at OLLAMA_MCP_CONCURRENCY=${t.concurrency}

| | wall (median of ${t.reps}) | each rep | efficiency (ideal / wall) |
|---|---|---|---|
| ideal (${t.runs}/${t.concurrency} x ${t.modelMs} ms) | ${(t.idealMs / 1000).toFixed(3)} s | | 1 |
| server, ${t.runs} calls issued at once by one client | ${(t.serverWall / 1000).toFixed(3)} s | ${t.serverWalls.map((w) => (w / 1000).toFixed(3)).join(', ')} | ${t.efficiency.toFixed(3)} |
| direct execa, ${t.concurrency} at a time (no server) | ${(t.directWall / 1000).toFixed(3)} s | ${t.directWalls.map((w) => (w / 1000).toFixed(3)).join(', ')} | ${t.directEfficiency.toFixed(3)} |

Server relative to direct: ${t.relative.toFixed(3)}. Per-spawn time: server's \`duration_ms\` p50 ${ms(t.serverSpawn.p50, 0)} / p95 ${ms(t.serverSpawn.p95, 0)} ms; direct p50 ${ms(t.directSpawn.p50, 1)} / p95 ${ms(t.directSpawn.p95, 1)} ms. Longest \`queue_ms\`: ${t.maxQueueMs} ms. Other processes used ${noise(t)} of the CPUs meanwhile.

## 3. State transaction with ${s.tasks.toLocaleString('en-US')} tasks (ms)

| Mode | p50 | p95 | mean | max |
|---|---|---|---|---|
| warm (the server's long-lived StateStore) | ${ms(s.warm.p50, 3)} | ${ms(s.warm.p95, 3)} | ${ms(s.warm.mean, 3)} | ${ms(s.warm.max, 3)} |
| cold (fresh StateStore per transaction) | ${ms(s.cold.p50, 3)} | ${ms(s.cold.p95, 3)} | ${ms(s.cold.mean, 3)} | ${ms(s.cold.max, 3)} |
| warm, while a second process runs transactions back to back | ${ms(s.contended.p50, 3)} | ${ms(s.contended.p95, 3)} | ${ms(s.contended.mean, 3)} | ${ms(s.contended.max, 3)} |

${s.transactions} transactions per mode on random task ids. Seeding ${s.tasks} entries (one \`transact('all')\`) took ${ms(s.seedMs, 0)} ms; the ledger is ${(s.ledgerBytes / 1024).toFixed(0)} KiB in 64 shards. \`new StateStore()\` itself (not in the cold figure): p50 ${ms(s.construct.p50, 3)} ms. Under contention this process managed ${s.contendedTxPerS.toFixed(0)} tx/s and the other ${s.hammerTxPerS.toFixed(0)} tx/s. Other processes (not the hammer, which is ours) used ${noise(s)} of the CPUs meanwhile.

## 4. \`report --json\` over ${r.lines.toLocaleString('en-US')} lines, side by side with jq

${describeReport(r)
  .split('\n')
  .map((line) => `- ${line}`)
  .join('\n')}

The log is generated by \`bench/report-vs-jq.mjs\` (realistic records: about ten models, mixed statuses, escalations and circuit openings, log-normal durations). The report runs in its own process (\`runReportCommand\` from \`dist/\`, as \`report --json --dir DIR\` does); jq computes the same per-model counts and p95 (its program is in that file) and the two are compared. Peak RSS from \`/usr/bin/time -v\` when present.

## Method

- All three benchmarks run in one process (\`bench/run.mjs\`), one after the other, on the same machine state. The server is the built \`dist/cli.js\`, started over stdio by the SDK \`Client\` + \`StdioClientTransport\` (as \`test/e2e/harness.ts\` does), with \`OLLAMA_BIN\` set to the fake and \`OLLAMA_MCP_TELEMETRY_DIR\` in a fresh temp dir; temp dirs are removed and every child process is closed at the end.
- **Overhead**: the client lists the tools first, as real clients do (so the SDK client also validates each result against \`outputSchema\`). Then each round runs, in a random order, one \`ollama_run\` with a \`task_id\` (rotating over 50 ids, so the ledger transaction is measured), one without, one direct \`execa\` spawn of the same fake (\`run llama3.2 --nowordwrap\`, prompt on stdin via \`input\`, same environment) and one MCP \`ping\`. Wall time is measured in the client around \`callTool\` / \`execa\`. Measured with both the node fake (\`test/fixtures/fake-ollama.mjs\`, ~40+ ms of Node start-up per spawn, whose jitter is large next to the overhead) and a minimal \`#!/bin/sh\` fake (\`bench/fake-min.sh\`: \`cat >/dev/null; printf 'ok\\n\\n'\`), which shows the server's own cost more clearly. Both fakes also answer \`ollama list\`, so the server's installed-model preflight (on by default, list cached 30 s) is on the measured path as in production. Server defaults otherwise.
- **Throughput**: the fake is ${t.fakeLabel}: it reads stdin to EOF, sleeps 100 ms and prints \`ok\`. The node fake costs ~40-60 ms of CPU per spawn and a sh script (sh, cat, sleep) 8-15 ms, which on ${machine.nproc} cores would hide what this measures (does the server keep its slots busy?), so a compiled fake is used when a C compiler is present. The ideal counts only the 100 ms per run. ${t.runs} \`ollama_run\` calls (each with its own \`task_id\`) are issued at once by one client; wall time is first call to last answer. The reference spawns the same fake ${t.runs} times with \`execa\`, ${t.concurrency} at a time (the practical ceiling of this machine). ${t.reps} repetitions each way, alternating which goes first; the median wall time is reported.
- **State**: \`StateStore\` from \`dist/store/state-store.js\` in a temp dir, seeded with ${s.tasks} realistic \`TaskLedgerEntry\` values and 4 circuits. Each transaction is what \`RunService\` does per run: \`store.transact([taskId], ...)\` updating the task entry (\`recordAttempt\`) and the model's circuit (\`recordVerdict\`) from \`dist/policy/\`. Cold = \`new StateStore()\` per transaction (its construction is timed apart); contention = the warm loop again while \`bench/state-hammer.mjs\` does back-to-back transactions on the same files from another process. Afterwards the ledger is checked to still hold all ${s.tasks} tasks.
- Percentiles are linear interpolation between closest ranks. On this shared ${machine.nproc}-core VM the overhead p50 differences moved by about +-1 ms between runs (more with the node fake, whose own spawn jitter dominates), p95 differences by several ms, throughput by a few percent; the "other processes" CPU figures say how disturbed a run was.
`;
}

main().then(
  () => process.exit(0),
  async (error) => {
    process.stderr.write(`bench: error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await closeAllServers();
    removeAllTempDirs();
    process.exit(1);
  },
);
