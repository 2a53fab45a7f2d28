// `node bench/report-vs-jq.mjs`: the `report` summary against jq on a large runs.jsonl.
//
// Generates a realistic 1,000,000-line runs.jsonl in a temp dir (10 models, mixed statuses, retries
// that escalate, circuit openings, log-normal durations), then runs, each in its own process under
// `/usr/bin/time -v` (wall time and peak RSS):
//   - report: the real CLI, `node dist/cli.js report --json --dir DIR`, and
//   - jq:     a jq program computing the same per-model counts, p95 and max duration,
// checks that both agree (counts exactly, p95 within the documented 1%), and prints a small table.
//
// Needs `npm run build` first. `npm run bench` times the report on its own (bench/report-cli.mjs)
// and adds this jq comparison only with BENCH_JQ=1 (jq takes ~40 s here). Exit code 0 when everything ran and agreed (a missed target is reported as FAIL, not as an
// error); 1 when the two disagree or a run failed. Without jq the jq half is skipped (exit 0).
//
// Options (environment):
//   REPORT_BENCH_LINES=N     lines to generate (default 1000000; BENCH_QUICK=1: 50000)
//   REPORT_BENCH_DIST=DIR    the build to measure (default dist/ beside this folder)
//   REPORT_BENCH_KEEP=1      keep the temp dir (its path is printed)
//   JQ=/path/to/jq           the jq to compare with (default /usr/bin/jq, else jq on PATH)
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { ROOT, markdownTable, measureNodeProcess, measureProcess, secs } from './lib.mjs';

export const TARGETS = { speedup: 3, peakRssMb: 150 };

// ------------------------------------------------------------------------------------ generation

/** mulberry32: a small, fast, seeded PRNG, so every run measures the same file. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MODELS = [
  // name, share of runs, median duration ms, chance a run fails (spread over the failure kinds)
  ['qwen2.5-coder:7b', 0.22, 3_500, 0.06],
  ['llama3.2:latest', 0.16, 1_800, 0.04],
  ['qwen3:8b', 0.14, 6_000, 0.08],
  ['deepseek-r1:14b', 0.1, 22_000, 0.15],
  ['gemma3:4b', 0.09, 1_500, 0.03],
  ['mistral:7b', 0.08, 3_000, 0.05],
  ['phi4:14b', 0.07, 9_000, 0.1],
  ['codellama:13b', 0.06, 8_000, 0.12],
  ['qwen2.5:32b', 0.05, 40_000, 0.2],
  ['gpt-oss:20b', 0.03, 15_000, 0.3],
];
const FAILURES = [
  // status, weight, error text, spawned?
  ['timeout', 40, 'no answer within 120000 ms; the model process was killed', true],
  ['crashed', 15, 'Error: llama runner process has terminated: exit status 2', true],
  ['empty_output', 10, 'the model answered nothing (exit 0, empty output)', true],
  ['output_limit', 3, 'output passed 1048576 bytes; the model was stopped', true],
  ['server_busy', 8, 'Error: server busy, please try again.  maximum pending requests exceeded', true],
  ['circuit_open', 12, 'circuit open for this model: 5 failures in a row; retry after 60 s', false],
  ['cancelled', 6, 'cancelled by the client', true],
  ['invalid_input', 4, 'Invalid arguments: `prompt`: must not be empty or only whitespace.', false],
  ['model_not_found', 2, 'Error: pull model manifest: file does not exist', true],
];
const FAILURE_WEIGHT = FAILURES.reduce((sum, f) => sum + f[1], 0);
const TASK_FAILURES = new Set(['timeout', 'crashed', 'empty_output', 'output_limit', 'server_busy', 'model_not_found']);
const MODEL_FAULT = new Set(['timeout', 'crashed', 'empty_output', 'output_limit']);

/**
 * Writes `lines` realistic records to `file` in 8 MB writes: schema v2 lines in the server's key
 * order, every 50th a v1 line, some busy retries the server made itself (`will_retry`). Returns
 * { bytes, ms, tasks, runs } (`runs`: the lines the caller saw, what the report counts).
 * One simulated day from `startMs`; about 200 tasks in flight, each retried until ok or escalated (max_retries 3).
 */
export function generateRunsJsonl(file, lines, seed = 42, startMs = Date.UTC(2025, 10, 21, 12, 0, 0)) {
  const started = performance.now();
  const server = simulation(seed);
  const stepMs = 86_400_000 / lines;
  const fd = openSync(file, 'w');
  // Lines go straight into one reused 8 MB buffer (they are ASCII): no array of strings to join,
  // next to no garbage.
  const buffer = Buffer.allocUnsafe(8 << 20);
  let used = 0;
  let bytes = 0;
  let runs = 0;
  try {
    for (let i = 0; i < lines; i++) {
      const { line, seen } = server.next(i, startMs + i * stepMs);
      if (seen) runs += 1;
      if (used + line.length > buffer.length) {
        bytes += writeSync(fd, buffer, 0, used);
        used = 0;
      }
      used += buffer.write(line, used, 'latin1');
    }
    if (used > 0) bytes += writeSync(fd, buffer, 0, used);
  } finally {
    closeSync(fd);
  }
  return { bytes, ms: performance.now() - started, tasks: server.tasks(), runs };
}

/** The runs of a seeded simulated server: `next(i, at)` is its line `i`, logged at about `at` (epoch ms). */
function simulation(seed) {
  const random = prng(seed);
  const normal = () => normalDraw(random);
  const pick = (rows, total = 1) => weightedDraw(random, rows, total);
  const consecutive = new Map(MODELS.map((m) => [m[0], 0]));
  const spells = new Map(MODELS.map((m) => [m[0], 0]));
  const live = [];
  let nextTask = 1;
  const newTask = () => ({ id: `task-${(nextTask++).toString(36)}`, model: pick(MODELS), failures: 0 });
  for (let i = 0; i < 200; i++) live.push(newTask());

  const next = (i, at) => {
    const slot = Math.floor(random() * live.length);
    const task = live[slot];
    const [model, , medianMs, failRate] = task.model;
    const ts = new Date(at + random() * 50).toISOString();
    // Now and then a model has a bad spell: 6 timeouts in a row, which opens its circuit.
    let spell = spells.get(model);
    if (spell === 0 && random() < 1 / 2000) spell = 6;
    if (spell > 0) spells.set(model, spell - 1);
    const f = spell > 0 ? FAILURES[0] : random() < failRate ? pick(FAILURES, FAILURE_WEIGHT) : null;
    const status = f ? f[0] : 'ok';
    const spawned = f ? f[3] : true;
    let duration = 0;
    if (spawned)
      duration =
        status === 'timeout' ? 120_000 + Math.round(random() * 40) : Math.max(1, Math.round(medianMs * Math.exp(0.6 * normal())));
    const queue = spawned && random() < 0.3 ? Math.round(Math.exp(5 + 1.5 * normal())) : 0;
    const retryCount = task.failures;
    let reason = null;
    if (f && TASK_FAILURES.has(status)) {
      task.failures += 1;
      if (status === 'model_not_found') reason = 'model_not_found';
      else if (task.failures > 3) reason = 'max_retries_exceeded';
    }
    if (status === 'circuit_open') reason = 'circuit_open';
    let cf = consecutive.get(model);
    if (MODEL_FAULT.has(status)) cf += 1;
    else if (status === 'ok') cf = 0;
    const opened = cf === 5;
    if (opened) reason ??= 'circuit_open';
    consecutive.set(model, opened ? 0 : cf); // the circuit's cooldown passes before the next run, say
    // Schema v2 (the contract's key order), except every 50th line, written by an older server (v1).
    const v1 = i % 50 === 7;
    // A server_busy that the server retried itself (will_retry): not a run the caller saw.
    const retried = !v1 && status === 'server_busy' && random() < 0.5;
    const line = formatLine({ i, ts, task, f, duration, queue, retryCount, reason, cf, opened, v1, retried }, random);
    if (status === 'ok' || reason !== null) live[slot] = newTask();
    return { line, seen: !retried };
  };
  return { next, tasks: () => nextTask - 1 };
}

/** A standard normal draw (Box-Muller). */
function normalDraw(random) {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** One of `rows`, drawn by its weight `row[1]` (the weights sum to `total`). */
function weightedDraw(random, rows, total) {
  let r = random() * total;
  for (const row of rows) if ((r -= row[1]) <= 0) return row;
  return rows[0];
}

/** One runs.jsonl line, v1 or v2; the figures a run does not decide are drawn from `random`. */
function formatLine(r, random) {
  const { duration, opened, v1, retried } = r;
  const [status, , error, spawned] = r.f ?? ['ok', 0, null, true];
  const model = r.task.model[0];
  const exitCode = status === 'ok' || status === 'empty_output' ? '0' : spawned && status !== 'timeout' ? '1' : 'null';
  const prompt = 50 + Math.floor(random() * 3000);
  const usage =
    status === 'ok'
      ? `{"prompt_tokens":${prompt},"output_tokens":${10 + Math.floor(random() * 1500)},"tokens_per_second":${(20 + random() * 60).toFixed(2)},` +
        `"prompt_tokens_per_second":${(200 + random() * 900).toFixed(2)},"load_ms":${random() < 0.02 ? 3000 + Math.floor(random() * 4000) : 12 + Math.floor(random() * 20)},"total_ms":${duration}}`
      : '{"prompt_tokens":null,"output_tokens":null,"tokens_per_second":null,"prompt_tokens_per_second":null,"load_ms":null,"total_ms":null}';
  const head = `"ts":"${r.ts}","run_id":"r-${r.i.toString(36)}","batch_id":null`;
  const run =
    `"task_id":"${r.task.id}","status":"${status}","exit_code":${exitCode},"signal":${status === 'timeout' ? '"SIGTERM"' : 'null'},` +
    `"timed_out":${status === 'timeout'},"truncated":${status === 'output_limit'},"duration_ms":${duration},"queue_ms":${r.queue},` +
    `"timeout_ms":${spawned ? 120000 : 'null'},"prompt_chars":${200 + Math.floor(random() * 4000)},"output_chars":${status === 'ok' ? 50 + Math.floor(random() * 6000) : 0},` +
    `"thinking_chars":0,`;
  const retries = `"retry_count":${r.retryCount},"max_retries":3,"escalate":${r.reason !== null},"escalation_reason":${JSON.stringify(r.reason)},`;
  const tail =
    `"circuit":{"state":"${opened ? 'open' : 'closed'}","consecutive_failures":${r.cf},"retry_after_seconds":${opened ? 60 : 'null'},"transition":${opened ? '"opened"' : 'null'}},` +
    `"error":${JSON.stringify(error)},"server_pid":${4000 + (r.i % 3)}`;
  return v1
    ? `{"v":1,${head},"tool":"ollama_run","model":"${model}",${run}${retries}${tail}}\n`
    : `{"v":2,${head},"chain_id":null,"chain_step":null,"tool":"ollama_run","model":"${model}","model_key":"${model}",` +
        `${run}"usage":${usage},${retries}"busy_try":0,"will_retry":${retried},${tail},"warnings":[]}\n`;
}

// ------------------------------------------------------------------------------------ measuring

/**
 * The same figures as the summary's models[]: runs, ok, failures by status, escalations, nearest-rank
 * p95 and max of duration_ms > 0, skipping torn lines like the report (`-R` + `fromjson?`). Written
 * for jq 1.6: collect small arrays, `group_by`, then count per group. (Appending to per-model arrays
 * inside one `reduce` (`.[$m].d += [$d]`) is quadratic in jq 1.6: 16 s for 50,000 lines.)
 */
export const JQ_PROGRAM = `
[inputs | fromjson? | objects | select((.model | type) == "string" and (.status | type) == "string" and .will_retry != true)
 | [.model, .status, (.escalate == true), .duration_ms]]
| group_by(.[0])
| map({key: .[0][0], value: (
    (reduce .[] as $r ({runs: 0, ok: 0, failures: {}, escalations: 0};
       .runs += 1
       | if $r[1] == "ok" then .ok += 1 else .failures[$r[1]] += 1 end
       | if $r[2] then .escalations += 1 else . end))
    + ([.[] | .[3] | select(type == "number" and . > 0)] | sort
       | {p95: (if length == 0 then null else .[(length * 0.95 | ceil) - 1] end), max: max}))})
| from_entries
`;

/** The real CLI, as a developer runs it: `node dist/cli.js report --json --dir DIR`, wall time and peak RSS. */
export function runReportCli(dir, distDir = path.join(ROOT, 'dist')) {
  return measureNodeProcess(path.join(distDir, 'cli.js'), ['report', '--json', '--dir', dir]);
}

/**
 * Generates the log, runs both, compares. Returns every figure; `agree` is false when the counts
 * differ or a p95 is off by more than 1%.
 */
export async function measureReportVsJq({
  lines = 1_000_000,
  distDir = path.join(ROOT, 'dist'),
  jq = findJq(),
  keep = false,
} = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'report-vs-jq-'));
  try {
    const file = path.join(dir, 'runs.jsonl');
    const gen = generateRunsJsonl(file, lines);
    const report = await runReportCli(dir, distDir);
    const summary = JSON.parse(report.stdout);
    const result = {
      dir,
      lines,
      bytes: statSync(file).size,
      gen,
      report,
      summary,
      jq: null,
      mismatches: [],
      agree: true,
      maxP95Error: NaN,
    };
    if (jq !== null) {
      const jqRun = await measureProcess(jq, ['-nR', '-c', JQ_PROGRAM, file]);
      const expected = JSON.parse(jqRun.stdout);
      result.jq = jqRun;
      result.mismatches = compare(summary, expected);
      result.agree = result.mismatches.length === 0;
      result.maxP95Error = Math.max(
        ...summary.models.map((m) =>
          expected[m.model]?.p95 ? Math.abs(m.duration_ms.p95 - expected[m.model].p95) / expected[m.model].p95 : 0,
        ),
      );
    }
    return result;
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

export function compare(summary, expected) {
  const problems = [];
  const ours = new Map(summary.models.map((m) => [m.model, m]));
  for (const [model, want] of Object.entries(expected)) {
    const got = ours.get(model);
    if (!got) {
      problems.push(`${model}: missing from the report`);
      continue;
    }
    for (const field of ['runs', 'ok', 'escalations'])
      if (got[field] !== want[field]) problems.push(`${model}: ${field} ${got[field]} vs jq ${want[field]}`);
    if (JSON.stringify(sortKeys(got.failures)) !== JSON.stringify(sortKeys(want.failures))) {
      problems.push(`${model}: failures ${JSON.stringify(got.failures)} vs jq ${JSON.stringify(want.failures)}`);
    }
    if (got.duration_ms.max !== want.max) problems.push(`${model}: max ${got.duration_ms.max} vs jq ${want.max}`);
    const error = Math.abs(got.duration_ms.p95 - want.p95) / want.p95;
    if (!(error <= 0.01))
      problems.push(`${model}: p95 ${got.duration_ms.p95} vs jq ${want.p95} (${(error * 100).toFixed(2)}% off)`);
  }
  if (ours.size !== Object.keys(expected).length)
    problems.push(`models: report has ${ours.size}, jq ${Object.keys(expected).length}`);
  return problems;
}

function sortKeys(object) {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : 1)));
}

export function jqVersion(jq) {
  try {
    return execFileSync(jq, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return 'jq';
  }
}

export function findJq() {
  if (process.env.JQ) return process.env.JQ;
  if (existsSync('/usr/bin/jq')) return '/usr/bin/jq';
  for (const dir of (process.env.PATH ?? '').split(path.delimiter))
    if (dir && existsSync(path.join(dir, 'jq'))) return path.join(dir, 'jq');
  return null;
}

// ------------------------------------------------------------------------------------ main

async function main() {
  const quick = process.env.BENCH_QUICK === '1';
  const lines = Number(process.env.REPORT_BENCH_LINES ?? (quick ? 50_000 : 1_000_000));
  const distDir = path.resolve(process.env.REPORT_BENCH_DIST ?? path.join(ROOT, 'dist'));
  if (!existsSync(path.join(distDir, 'cli.js'))) {
    process.stderr.write(`report-vs-jq: ${path.join(distDir, 'cli.js')} is missing: run \`npm run build\` first\n`);
    process.exit(1);
  }
  const jq = findJq();
  const say = (text = '') => process.stdout.write(`${text}\n`);
  say(
    `report vs jq${quick ? ' (QUICK)' : ''}: ${lines.toLocaleString('en-US')} lines, node ${process.version}, ${os.cpus().length} cpu, jq ${jq ?? 'not found'}`,
  );
  const r = await measureReportVsJq({ lines, distDir, jq, keep: process.env.REPORT_BENCH_KEEP === '1' });
  const mb = (r.bytes / 2 ** 20).toFixed(0);
  say(
    `generated ${mb} MiB (${r.gen.tasks.toLocaleString('en-US')} tasks) in ${(r.gen.ms / 1000).toFixed(1)} s${process.env.REPORT_BENCH_KEEP === '1' ? ` in ${r.dir}` : ''}`,
  );
  const openings = r.summary.models.reduce((sum, m) => sum + m.circuit_openings, 0);
  say(
    `report: ${r.summary.total_runs.toLocaleString('en-US')} runs, ${r.summary.models.length} models, ${r.summary.total_escalations.toLocaleString('en-US')} escalations, ` +
      `${openings} circuit openings, ${r.summary.escalated_tasks.length} escalated tasks kept (truncated: ${r.summary.escalated_tasks_truncated}), ${r.summary.timeline.buckets.length} x ${r.summary.timeline.bucket} buckets`,
  );
  if (r.jq)
    say(`largest p95 difference from jq's exact nearest rank: ${(r.maxP95Error * 100).toFixed(2)}% (documented bound 1%)`);
  say();
  const rows = resultRows(r, lines, jq);
  say(markdownTable(rows));
  say(`(peak RSS from ${r.report.rssSource}; wall includes node/jq start-up)`);
  if (!r.jq) say('jq not found: comparison skipped');
  for (const problem of r.mismatches) say(`MISMATCH ${problem}`);
  if (!r.agree) process.exit(1);
}

/** The table: the report, and with jq, jq's run, the speed-up and whether the figures agree. */
function resultRows(r, lines, jq) {
  const rate = (wallMs) =>
    `${Math.round(lines / wallMs).toLocaleString('en-US')}k lines/s, ${(r.bytes / 2 ** 20 / (wallMs / 1000)).toFixed(0)} MiB/s`;
  const run = (x) => [secs(x.wallMs), rate(x.wallMs), `${x.rssMb.toFixed(0)} MB`];
  const verdict = (ok) => (ok ? 'PASS' : 'FAIL');
  const rows = [
    ['', 'wall', 'throughput', 'peak RSS', 'target', 'result'],
    ['report --json (node)', ...run(r.report), `RSS < ${TARGETS.peakRssMb} MB`, verdict(r.report.rssMb < TARGETS.peakRssMb)],
  ];
  if (!r.jq) return rows;
  const speedup = r.jq.wallMs / r.report.wallMs;
  return [
    ...rows,
    [`${jqVersion(jq)} (same per-model figures)`, ...run(r.jq), 'info', 'info'],
    [
      'speed-up (jq wall / report wall)',
      `${speedup.toFixed(1)}x`,
      '',
      '',
      `>= ${TARGETS.speedup}x`,
      verdict(speedup >= TARGETS.speedup),
    ],
    ['per-model counts, max equal; p95 within 1%', r.agree ? 'yes' : 'NO', '', '', 'equal', verdict(r.agree)],
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error) => {
    process.stderr.write(`report-vs-jq: ${error.stack ?? error}\n`);
    process.exit(1);
  });
}
