// `npm run bench`: every benchmark in one run, each issue-11 / issue-21 target printed with its
// baseline from the same run. Exit code 0 when every benchmark ran (a missed target is reported as
// FAIL, not as an error), non-zero when something actually went wrong (1), or the watchdog fired (3).
//
// Options (see bench/README.md):
//   --write | BENCH_WRITE=1  also write bench/RESULTS.md (never on a plain run)
//   BENCH_RESULTS_FILE=<f>   write the Markdown to <f> instead (implies writing)
//   BENCH_QUICK=1            tiny sample counts, for checking the harness itself (figures meaningless)
//   BENCH_JQ=1               add the jq comparison to the report benchmark (~40 s here)
//   (the report benchmark alone: node bench/report-cli.mjs)
//   BENCH_WAIT_IDLE=<s>      first wait up to <s> seconds for the CPUs to be idle (a shared machine)
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  BENCH_DIR,
  NODE_FAKE,
  SH_FAKE,
  SH_FAKE_100MS,
  closeAllServers,
  compileC,
  cpuBusyPercent,
  cpuTicks,
  ensureExecutable,
  fakeBinary,
  machineInfo,
  markdownTable,
  ms,
  removeAllTempDirs,
  secs,
} from './lib.mjs';
import { AGENT_TARGETS, BEFORE, agentViewLines, measureAgentView } from './agent-view.mjs';
import { measureOverhead } from './overhead.mjs';
import { measureReportCli, reportLines, reportTargetRows } from './report-cli.mjs';
import { measureSummaryWithSince } from './report-since.mjs';
import { measureScheduling, schedulingRows } from './scheduling.mjs';
import { measureSharedOllama, sharedOllamaRows } from './shared-ollama.mjs';
import { hostsRows, measureHosts } from './hosts.mjs';
import { measureStartup } from './startup.mjs';
import { measureState, stateLines } from './state.mjs';
import { measureThroughput } from './throughput.mjs';

const QUICK = process.env.BENCH_QUICK === '1';
const RESULTS_FILE = process.env.BENCH_RESULTS_FILE
  ? path.resolve(process.env.BENCH_RESULTS_FILE)
  : process.argv.includes('--write') || process.env.BENCH_WRITE === '1'
    ? path.join(BENCH_DIR, 'RESULTS.md')
    : null;
const WATCHDOG_MS = 9 * 60 * 1000;
const IDLE_BUSY_PCT = 15;

/**
 * What a user would notice: the server's added latency per call (a model takes seconds), the ledger, the
 * throughput, the start-up a client waits on, the report (issue 21), and the scheduling (issue 18).
 */
const TARGETS = {
  added: 5, // ms, paired median over a direct child_process.spawn, with or without task_id
  ledgerP95: 50, // ms, at 10k tasks: far below what a user waiting for a model notices
  throughput: 0.97, // server runs/s relative to direct child_process.spawn at the same concurrency
  startup: 1.3, // time to the first initialize reply, relative to a minimal SDK server
  sinceRatio: 1.25, // report --since 24h wall after months of rotated history, relative to one day
};

const PLAN = QUICK
  ? {
      rounds: 30,
      warmup: 5,
      runs: 40,
      reps: 1,
      tasks: 10_000,
      transactions: 50,
      stateWarmup: 5,
      startups: 2,
      report: { realisticLines: 2_000, largeLines: 50_000, reps: 1 },
      since: { days: 10, linesPerDay: 1_000, reps: 1 },
    }
  : {
      rounds: 600,
      warmup: 30,
      runs: 200,
      reps: 5,
      tasks: 10_000,
      transactions: 500,
      stateWarmup: 50,
      startups: 12,
      report: { realisticLines: 20_000, largeLines: 1_000_000, reps: 3 },
      since: { days: 90, linesPerDay: 5_000, reps: 5 },
    };

const output = [];
const say = (line = '') => {
  output.push(line);
  process.stdout.write(`${line}\n`);
};

/**
 * Shares (%) of the machine's CPU used between two `cpuTicks()` readings `seconds` apart, by this
 * process and its reaped children (`own`) and by other processes (`other`); null without /proc.
 */
function cpuShares(before, after, seconds) {
  if (!before || !after || !(seconds > 0)) return null;
  const capacity = seconds * 100 * os.availableParallelism(); // USER_HZ is 100 on Linux
  const own = after.ours - before.ours;
  return { own: (100 * own) / capacity, other: Math.max(0, (100 * (after.machineBusy - before.machineBusy - own)) / capacity) };
}

/** Share of the machine's CPU that other processes used while `fn` ran (its children are reaped by then). */
async function withNoise(fn) {
  const t0 = performance.now();
  const before = cpuTicks();
  const result = await fn();
  const seconds = (performance.now() - t0) / 1000;
  return Object.assign(result, { otherCpuPct: cpuShares(before, cpuTicks(), seconds)?.other ?? null, seconds });
}
const pass = (ok) => (ok ? 'PASS' : 'FAIL');
const noise = (x) => (x.otherCpuPct === null ? 'n/a' : `${x.otherCpuPct.toFixed(0)}%`);

async function main() {
  for (const file of [SH_FAKE, SH_FAKE_100MS, NODE_FAKE]) ensureExecutable(file);
  await waitForIdle();
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
  say(`ollama-runner-mcp benchmarks${QUICK ? ' (QUICK: sample counts too small, figures meaningless)' : ''}`);
  say(`machine: ${machine.nproc} cpu (${machine.cpuModel}), ${machine.memory}, node ${machine.node}, ${machine.os}`);
  say(`load average at start: ${machine.loadavg}; CPU busy in the 1.5 s before start: ${machine.busyBefore}`);
  if (busyBefore !== null && busyBefore > IDLE_BUSY_PCT)
    say(`WARNING: the machine is not idle (${machine.busyBefore} busy before start); figures will be noisy`);
  say();

  const results = await runBenchmarks();

  const totalS = (performance.now() - started) / 1000;
  machine.loadavgEnd = machineInfo().loadavg;
  // Everything this run started has exited and been reaped by now, so its CPU is in `own`.
  const shares = cpuShares(ticksBefore, cpuTicks(), totalS);
  const share = (pct) => (shares ? `${pct.toFixed(0)}% of the machine` : 'n/a');
  machine.otherCpu = share(shares?.other);
  machine.ownCpu = share(shares?.own);
  const { rows, missed } = printTargets(results);
  say(
    `total bench time: ${totalS.toFixed(1)} s; load average at end: ${machine.loadavgEnd}; CPU used by the bench and its children: ${machine.ownCpu}, by other processes: ${machine.otherCpu}`,
  );
  for (const [label, text] of [
    ['added latency', results.overhead.serverStderr],
    ['throughput', results.throughput.serverStderr],
  ])
    if (text.trim()) say(`note: server stderr (${label}): ${text.trim().slice(0, 500)}`);

  if (RESULTS_FILE) {
    writeFileSync(RESULTS_FILE, renderMarkdown({ machine, rows, missed, totalS }));
    say(`wrote ${path.relative(process.cwd(), RESULTS_FILE)}`);
  }
  clearTimeout(watchdog);
}

/** The figures mean little if something else is using the CPUs: wait up to BENCH_WAIT_IDLE seconds for it to stop. */
async function waitForIdle() {
  const deadline = performance.now() + Number(process.env.BENCH_WAIT_IDLE ?? 0) * 1000;
  let busy;
  while (performance.now() < deadline && (busy = await cpuBusyPercent(2000)) !== null && busy > IDLE_BUSY_PCT) {
    say(`waiting for an idle machine (CPUs ${busy.toFixed(0)}% busy) ...`);
    await new Promise((resolve) => setTimeout(resolve, 5000));
  }
}

/** The seven benchmarks in turn, each printed as it ends. */
async function runBenchmarks() {
  const fast = fakeBinary(0);
  const slow = fakeBinary(100);
  const floorDriver = compileC('spawn-floor.c', 'spawn-floor');
  if (!floorDriver.bin) say(`posix_spawn floor skipped: ${floorDriver.why}`);

  say(
    `[1/7] spawn baselines and added latency: ${PLAN.rounds} interleaved rounds after ${PLAN.warmup} warm-up rounds, ${fast.label} ...`,
  );
  const overhead = await withNoise(() =>
    measureOverhead({ fake: fast, floorBin: floorDriver.bin, rounds: PLAN.rounds, warmup: PLAN.warmup }),
  );
  printOverhead(overhead);

  say(`[2/7] throughput: ${PLAN.runs} runs of a 100 ms ${slow.label}, concurrency 8, ${PLAN.reps} rep(s) each way ...`);
  const throughput = await withNoise(() =>
    measureThroughput({ bin: slow.bin, runs: PLAN.runs, concurrency: 8, modelMs: 100, reps: PLAN.reps }),
  );
  printThroughput(throughput);

  say(`[3/7] ledger transaction: ${PLAN.tasks} tasks, ${PLAN.transactions} transactions per mode ...`);
  const statePlan = { tasks: PLAN.tasks, transactions: PLAN.transactions, warmup: PLAN.stateWarmup };
  const state = await withNoise(() => measureState(statePlan));
  printState(state);
  // Team mode: the same transaction on a real Redis, when redis-server is installed (bench/state-redis.mjs).
  const { stateRedisLines } = await import('./state-redis.mjs');
  (await stateRedisLines(statePlan, state)).forEach((line) => say(line));

  say(`[4/7] start-up to the first initialize reply: ${PLAN.startups} starts of each server, alternated ...`);
  const startup = await withNoise(() => measureStartup({ samples: PLAN.startups, fakeBin: fast.bin }));
  printStartup(startup);

  say(
    `[5/7] report --json through the CLI: ${PLAN.report.realisticLines.toLocaleString('en-US')} and ${PLAN.report.largeLines.toLocaleString('en-US')} lines; --since 24h after ${PLAN.since.days} days of rotated files ...`,
  );
  const report = await withNoise(async () => ({
    ...(await measureReportCli({ ...PLAN.report, withJq: process.env.BENCH_JQ === '1' })),
    since: await measureSummaryWithSince(PLAN.since),
  }));
  say(`  other processes used ${noise(report)} of the CPUs meanwhile`);
  reportLines(report).forEach((line) => say(line));
  say();

  say('[6/7] scheduling against one shared fake Ollama, next to plain FIFO dispatch in the same run ...');
  const scheduling = await withNoise(() => measureScheduling());
  const schedulingTargets = schedulingRows(scheduling);
  for (const r of schedulingTargets) say(`  ${r.measure}: ${r.value} (FIFO: ${r.baseline})${r.note ? `\n    ${r.note}` : ''}`);
  say(`  other processes used ${noise(scheduling)} of the CPUs meanwhile`);
  say('  several sessions, each with its own server, in front of one fake Ollama (the shared queue) ...');
  const sharedOllama = await withNoise(() => measureSharedOllama());
  const sharedTargets = sharedOllamaRows(sharedOllama);
  for (const r of sharedTargets) say(`  ${r.measure}: ${r.value} (${r.baseline})\n    ${r.note}`);
  say(`  other processes used ${noise(sharedOllama)} of the CPUs meanwhile`);
  schedulingTargets.push(...sharedTargets);
  say('  two Ollama hosts, each holding one of two models: routing by residency, against one host and round-robin ...');
  const hosts = await withNoise(() => measureHosts());
  const hostsTargets = hostsRows(hosts);
  for (const r of hostsTargets) say(`  ${r.measure}: ${r.value} (${r.baseline})\n    ${r.note}`);
  say(`  other processes used ${noise(hosts)} of the CPUs meanwhile`);
  schedulingTargets.push(...hostsTargets);
  say();

  say(
    '[7/7] what the agent reads: result sizes as a structuredContent client hands them over, tools/list, the largest reply ...',
  );
  const agent = await measureAgentView();
  agentViewLines(agent).forEach((line) => say(line));
  say();
  return { overhead, throughput, state, startup, report, schedulingTargets, agent };
}

/** The target table, then the missed targets with why. */
function printTargets({ schedulingTargets, agent, ...results }) {
  const rows = [
    ...targetRows(results),
    ...schedulingTargets.map((r) => ({
      ...r,
      result: pass(r.pass),
      why: r.note ?? 'see the scheduling section above',
    })),
    ...agentRows(agent),
  ];
  say('Targets (value and baseline from this run)');
  say(renderTable(rows));
  const missed = rows.filter((r) => r.result === 'FAIL');
  if (missed.length > 0) {
    say();
    say('Missed targets, why and the floor:');
    for (const r of missed) say(`- ${r.measure}: ${r.why}`);
  }
  say();
  return { rows, missed };
}

// ------------------------------------------------------------------------------------ printing

function printOverhead(o) {
  say(`  ${o.rounds} rounds in ${o.elapsedS.toFixed(1)} s; other processes used ${noise(o)} of the CPUs meanwhile`);
  say(`  argv: ${o.args.join(' ')} (${o.argsSource})`);
  say('  one run of the fake (prompt on stdin, stdout and stderr read to the end, exit awaited):');
  if (o.posix) say(`    posix_spawn from C (floor)   p50 ${ms(o.posix.p50, 3)}  p95 ${ms(o.posix.p95, 3)} ms  (n=${o.posix.n})`);
  else say('    posix_spawn from C (floor)   skipped (no C compiler)');
  say(`    node child_process.spawn     p50 ${ms(o.spawn.p50, 3)}  p95 ${ms(o.spawn.p95, 3)} ms`);
  say(
    `    execa (defaults)             p50 ${ms(o.execa.p50, 3)}  p95 ${ms(o.execa.p95, 3)} ms   paired median over spawn ${ms(o.paired.execa.p50, 3)} ms`,
  );
  say(
    `    server's spawn function      p50 ${ms(o.runner.p50, 3)}  p95 ${ms(o.runner.p95, 3)} ms   paired median over spawn ${ms(o.paired.runner.p50, 3)} ms  (runModelProcess: execa, the server's options)`,
  );
  say(`    ollama_run + task_id         p50 ${ms(o.task.p50, 3)}  p95 ${ms(o.task.p95, 3)} ms`);
  say(`    ollama_run, no task_id       p50 ${ms(o.none.p50, 3)}  p95 ${ms(o.none.p95, 3)} ms`);
  say(`    MCP ping round trip          p50 ${ms(o.ping.p50, 3)}  p95 ${ms(o.ping.p95, 3)} ms`);
  say('  added latency, median of per-round differences (server call i - direct spawn i):');
  say(
    `    over child_process.spawn: task_id ${ms(o.paired.task.p50, 3)} ms, no task_id ${ms(o.paired.none.p50, 3)} ms (task_id over no task_id ${ms(o.paired.taskOverNone.p50, 3)} ms)`,
  );
  say(
    `    over execa:               task_id ${ms(o.paired.taskOverExeca.p50, 3)} ms, no task_id ${ms(o.paired.noneOverExeca.p50, 3)} ms`,
  );
  say(
    `    over its spawn function:  task_id ${ms(o.paired.taskOverRunner.p50, 3)} ms, no task_id ${ms(o.paired.noneOverRunner.p50, 3)} ms  (what the server adds beyond spawning)`,
  );
  say(
    `  client wall minus the server's own duration_ms, p50: task_id ${ms(o.taskServerSide.p50, 3)} ms, no task_id ${ms(o.noneServerSide.p50, 3)} ms`,
  );
  say();
}

function printThroughput(t) {
  say(`  argv: ${t.args.join(' ')} (${t.argsSource}); other processes used ${noise(t)} of the CPUs meanwhile`);
  say(`  ideal ${t.runs}/${t.concurrency} x ${t.modelMs} ms = ${secs(t.idealMs)}`);
  const row = (name, label) =>
    say(
      `  ${label.padEnd(34)} wall ${secs(t.wall[name], 3)} (reps: ${t.walls[name].map((w) => (w / 1000).toFixed(3)).join(', ')})  efficiency ${t.efficiency[name].toFixed(3)}  per-run p50 ${ms(t.spawnMs[name].p50, 1)} ms`,
    );
  row('server', `server, ${t.runs} calls at once`);
  row('spawn', `child_process.spawn, ${t.concurrency} at a time`);
  row('execa', `execa, ${t.concurrency} at a time`);
  row('runner', `its spawn function, ${t.concurrency} at a time`);
  say(
    `  runs/s relative to child_process.spawn: server ${t.relative.toFixed(3)}, its spawn function alone ${t.relativeRunner.toFixed(3)} (the floor it keeps), execa ${t.relativeExeca.toFixed(3)}; longest queue_ms ${t.maxQueueMs}`,
  );
  say('  (per-run for the server is its own duration_ms; for the direct ways the wall time of one run)');
  say();
}

function printState(s) {
  say(`  other processes used ${noise(s)} of the CPUs meanwhile`);
  for (const line of stateLines(s)) say(line);
  say();
}

function printStartup(u) {
  say(`  other processes used ${noise(u)} of the CPUs meanwhile`);
  const rss = (x) => (x.rss ? `${x.rss.p50.toFixed(1)} MB` : 'n/a (no /proc)');
  say(
    `  node dist/cli.js          first reply p50 ${ms(u.ours.reply.p50, 1)}  p95 ${ms(u.ours.reply.p95, 1)} ms; idle RSS ${rss(u.ours)}`,
  );
  say(
    `  minimal SDK server        first reply p50 ${ms(u.minimal.reply.p50, 1)}  p95 ${ms(u.minimal.reply.p95, 1)} ms; idle RSS ${rss(u.minimal)}`,
  );
  say(`  ratio ${u.ratio.toFixed(2)}x (idle RSS read ${u.idleMs} ms after notifications/initialized)`);
  say();
}

// ------------------------------------------------------------------------------------ targets

function targetRows({ overhead: o, throughput: t, state: s, startup: u, report: r }) {
  const rows = [];
  const add = (measure, value, baseline, target, result, why) => rows.push({ measure, value, baseline, target, result, why });
  const spawnBaseline = `spawn p50 ${ms(o.spawn.p50, 2)} ms (server's spawn function ${ms(o.runner.p50, 2)}, execa ${ms(o.execa.p50, 2)}, posix_spawn ${o.posix ? ms(o.posix.p50, 2) : 'n/a'})`;
  const parts = `MCP round trip (ping) p50 ${ms(o.ping.p50, 2)} ms, the server's spawn function (execa with its options) over spawn ${ms(o.paired.runner.p50, 2)} ms (paired; execa's defaults ${ms(o.paired.execa.p50, 2)} ms)`;
  // execa is part of the design: the floor the server keeps includes its spawn function's cost over a bare spawn.
  const keptFloor = o.ping.p50 + o.paired.runner.p50;

  const task = o.paired.task.p50;
  add(
    'Added latency, ollama_run with task_id (paired median over child_process.spawn)',
    `${ms(task, 2)} ms`,
    spawnBaseline,
    `<= ${TARGETS.added} ms`,
    pass(task <= TARGETS.added),
    `it holds ${parts}, the ledger transaction (warm p50 ${ms(s.warm.p50, 2)} ms, task_id over no task_id ${ms(o.paired.taskOverNone.p50, 2)} ms paired) and the run-log append; the server adds ${ms(o.paired.taskOverRunner.p50, 2)} ms over its own spawn function; floor it keeps: ping + spawn function over spawn + a transaction's floor (${ms(s.floor.p50, 2)} ms measured) = ${ms(keptFloor + s.floor.p50, 2)} ms.`,
  );
  const none = o.paired.none.p50;
  add(
    'Added latency, ollama_run without task_id (paired median over child_process.spawn)',
    `${ms(none, 2)} ms`,
    spawnBaseline,
    `<= ${TARGETS.added} ms`,
    pass(none <= TARGETS.added),
    `it holds ${parts}, and the server's own work (validation, preflight, run-log append, the result's text): ${ms(o.paired.noneOverRunner.p50, 2)} ms over its own spawn function; floor it keeps: ping + spawn function over spawn = ${ms(keptFloor, 2)} ms.`,
  );
  add(
    `Ledger transaction at ${s.tasks.toLocaleString('en-US')} tasks, one server: p50 / p95`,
    `${ms(s.warm.p50, 2)} / ${ms(s.warm.p95, 2)} ms`,
    `floor ${ms(s.floor.p50, 2)} / ${ms(s.floor.p95, 2)} ms`,
    `p95 <= ${TARGETS.ledgerP95} ms`,
    pass(s.warm.p95 <= TARGETS.ledgerP95),
    ledgerWhy(s, s.warm),
  );
  add(
    `Throughput, ${t.runs} x ${t.modelMs} ms runs at concurrency ${t.concurrency}: runs/s relative to direct spawn`,
    `${t.relative.toFixed(3)} (wall ${secs(t.wall.server, 3)})`,
    `spawn wall ${secs(t.wall.spawn, 3)} (spawn function ${secs(t.wall.runner, 3)}, execa ${secs(t.wall.execa, 3)}, ideal ${secs(t.idealMs)})`,
    `>= ${TARGETS.throughput}`,
    pass(t.relative >= TARGETS.throughput),
    `the server lost ${ms(((t.wall.server - t.wall.spawn) * t.concurrency) / t.runs, 2)} ms per run and slot over direct spawns; its own spawn function alone (execa with the server's options) reaches ${t.relativeRunner.toFixed(3)}, the floor it keeps (execa's defaults ${t.relativeExeca.toFixed(3)}), so ${ms(((t.wall.runner - t.wall.spawn) * t.concurrency) / t.runs, 2)} ms of that is spawning through execa and ${ms(((t.wall.server - t.wall.runner) * t.concurrency) / t.runs, 2)} ms the server's own work (the MCP round trip, validation, the ledger, the log, one event loop for every run).`,
  );
  add(
    'Start-up to the first initialize reply (stdio), relative to a minimal SDK server',
    `${u.ratio.toFixed(2)}x (${ms(u.ours.reply.p50, 0)} ms)`,
    `minimal server ${ms(u.minimal.reply.p50, 0)} ms`,
    `<= ${TARGETS.startup}x`,
    pass(u.ratio <= TARGETS.startup),
    `cli.js takes ${ms(u.ours.reply.p50 - u.minimal.reply.p50, 0)} ms more to its first reply than a server that loads only the SDK and zod: that is what it loads and does before replying (issue 11: stdio should not load the HTTP server, report, doctor, or execa before the first spawn); floor: the minimal server.`,
  );
  add(
    'Idle RSS after initialize',
    u.ours.rss ? `${u.ours.rss.p50.toFixed(1)} MB` : 'n/a',
    u.minimal.rss ? `minimal server ${u.minimal.rss.p50.toFixed(1)} MB` : 'n/a',
    'reported',
    'info',
    '',
  );
  return [...rows, ...reportTargetRows(r, TARGETS)];
}

/** Issue 19's figures: what the agent pays in context per result and per session, and the largest reply. */
function agentRows(a) {
  const bytes = (n) => `${n.toLocaleString('en-US')} bytes`;
  const why = "each byte is in the agent's context (bench/agent-view.mjs prints what is left)";
  return [
    {
      measure: 'ok result as the model reads it (JSON of structuredContent), beyond the answer',
      value: bytes(a.ok),
      baseline: `before issue 19: ${bytes(BEFORE.ok)}`,
      target: `<= ${AGENT_TARGETS.ok} (aim ${AGENT_TARGETS.okAim})`,
      result: a.ok <= AGENT_TARGETS.okAim ? 'PASS (aim)' : pass(a.ok <= AGENT_TARGETS.ok),
      why,
    },
    {
      measure: 'retryable failure as the model reads it',
      value: bytes(a.failure),
      baseline: `before issue 19: ${bytes(BEFORE.failure)}`,
      target: `<= ${AGENT_TARGETS.failure}`,
      result: pass(a.failure <= AGENT_TARGETS.failure),
      why,
    },
    {
      measure: 'model-visible tools/list (names, titles, descriptions, input schemas)',
      value: bytes(a.tools.visible),
      baseline: `before issue 19: ${bytes(BEFORE.toolsVisible)}`,
      target: `<= ${AGENT_TARGETS.toolsVisible} (aim ${AGENT_TARGETS.toolsAim})`,
      result: a.tools.visible <= AGENT_TARGETS.toolsAim ? 'PASS (aim)' : pass(a.tools.visible <= AGENT_TARGETS.toolsVisible),
      why: 'paid in every session before any call',
    },
    {
      measure: 'running reply (a run handed back as a job), as the model reads it',
      value: a.running === null ? 'none' : bytes(a.running.structured),
      baseline: `text content ${a.running === null ? 'none' : bytes(a.running.text)}; ollama_wait's tools/list entry ${bytes(a.tools.wait ?? 0)}`,
      target: `<= ${AGENT_TARGETS.running}`,
      result: pass(a.running !== null && a.running.structured <= AGENT_TARGETS.running),
      why: 'what an agent reads each time a run outlasts its client',
    },
    {
      measure: 'largest reply: ollama_run_many of six 0.9 MB answers',
      value: a.largestReply.arrived ? `${(a.largestReply.bytes / 2 ** 20).toFixed(2)} MiB` : 'never arrived',
      baseline: 'before issue 19: never arrived (over 10 MiB)',
      target: `< ${AGENT_TARGETS.replyMiB} MiB`,
      result: pass(a.largestReply.arrived && a.largestReply.bytes < AGENT_TARGETS.replyMiB * 2 ** 20),
      why: a.largestReply.arrived ? '' : a.largestReply.error,
    },
  ];
}

function ledgerWhy(s, x) {
  return `a transaction locks, reads and validates state.json and one task shard, applies the run and writes what changed; the floor (lock file + write-temp-rename of one shard, nothing else) is ${ms(s.floor.p50, 2)} / ${ms(s.floor.p95, 2)} ms here; ${ms(x.p95, 1)} ms is what a run with a task_id spends on it, against the seconds a model takes.`;
}

function renderTable(rows) {
  const head = ['Measure', 'Value', 'Baseline (same run)', 'Target', 'Result'];
  return markdownTable([head, ...rows.map((r) => [r.measure, r.value, r.baseline, r.target, r.result])]);
}

/** How this run was started, for the record: the BENCH_* settings and the arguments. */
function invocation() {
  const settings = Object.entries(process.env)
    .filter(([key]) => key.startsWith('BENCH_'))
    .map(([key, value]) => `${key}=${value} `)
    .join('');
  return `${settings}node bench/run.mjs${process.argv
    .slice(2)
    .map((a) => ` ${a}`)
    .join('')}`;
}

function renderMarkdown({ machine, rows, missed, totalS }) {
  return `# Benchmark results

Generated by \`${invocation()}\` (after \`npm run build\`) on ${machine.date}${QUICK ? ' (BENCH_QUICK=1: sample counts too small, figures meaningless)' : ''}. Do not edit by hand; see [README.md](README.md) for what each figure means.

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
| Total bench time | ${totalS.toFixed(1)} s |

## Targets

${renderTable(rows)}
${missed.length > 0 ? `\nMissed targets, why and the floor:\n\n${missed.map((r) => `- ${r.measure}: ${r.why}`).join('\n')}\n` : ''}
## Full output

\`\`\`text
${output.join('\n')}
\`\`\`
`;
}

main().then(
  () => {
    removeAllTempDirs();
    process.exit(0);
  },
  async (error) => {
    process.stderr.write(`bench: error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await closeAllServers();
    removeAllTempDirs();
    process.exit(1);
  },
);
