// Benchmark 5: `report --json` through the real CLI on generated runs.jsonl files (see
// generateRunsJsonl in report-vs-jq.mjs), each run a separate `node` process (start-up included),
// wall time and peak RSS per run (see measureNodeProcess in lib.mjs):
//   - a realistic day of 20,000 lines: what a developer waits for;
//   - 1,000,000 lines (745 MiB): time and peak RSS, reported;
//   - with BENCH_JQ=1, jq computing the same per-model figures on the 1,000,000 lines, compared.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SERVER_ENTRY, makeTempDir, measureProcess, removeTempDir, secs, summarize } from './lib.mjs';
import { JQ_PROGRAM, compare, findJq, generateRunsJsonl, jqVersion, runReportCli } from './report-vs-jq.mjs';

/**
 * @param {{ realisticLines: number, largeLines: number, reps: number, withJq: boolean }} plan
 */
export async function measureReportCli(plan) {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const realistic = await onLog(plan.realisticLines, (log) => reportRuns(log, plan.reps));
  const large = await onLog(plan.largeLines, async (log) => {
    const result = await reportRuns(log, 1);
    return { ...result, jq: plan.withJq ? await againstJq(log, result.summary) : null };
  });
  return {
    realistic,
    large,
    jqSkipped: plan.withJq ? (findJq() ? null : 'jq not found on this machine') : 'off (BENCH_JQ=1 adds it; ~40 s here)',
  };
}

/** Generates a log of `lines` in a temp dir, measures on it, removes it. */
async function onLog(lines, measure) {
  const dir = makeTempDir('report');
  try {
    const file = path.join(dir, 'runs.jsonl');
    const gen = generateRunsJsonl(file, lines);
    const log = { dir, file, lines, runs: gen.runs, bytes: statSync(file).size };
    return { lines, bytes: log.bytes, genMs: gen.ms, ...(await measure(log)) };
  } finally {
    removeTempDir(dir);
  }
}

/** `report --json` `reps` times; checks that it counted every run the log holds. */
async function reportRuns(log, reps) {
  const runs = [];
  let summary = null;
  for (let rep = 0; rep < reps; rep += 1) {
    const r = await runReportCli(log.dir);
    summary = checked(r, log);
    runs.push(r);
  }
  return { cli: stats(runs), rssSource: runs[0].rssSource, summary };
}

/** The report's JSON; a report that is not JSON, or lost runs, is an error, not a figure. */
function checked(run, log) {
  const summary = JSON.parse(run.stdout);
  if (summary.total_runs !== log.runs)
    throw new Error(
      `report --json counted ${summary.total_runs} runs, the log has ${log.runs} (and ${log.lines - log.runs} lines the server retried)`,
    );
  return summary;
}

async function againstJq(log, summary) {
  const jqBin = findJq();
  if (!jqBin) return null;
  const run = await measureProcess(jqBin, ['-nR', '-c', JQ_PROGRAM, log.file]);
  return { version: jqVersion(jqBin), wallMs: run.wallMs, mismatches: compare(summary, JSON.parse(run.stdout)) };
}

function stats(list) {
  return {
    wall: summarize(list.map((r) => r.wallMs)),
    peakRssMb: Math.max(...list.map((r) => r.rssMb)),
    walls: list.map((r) => r.wallMs),
  };
}

// ------------------------------------------------------------------------------------ printing

const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const walls = (x) => x.walls.map((w) => (w / 1000).toFixed(2)).join(', ');
const mb = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} MB` : 'n/a');

/** The report benchmark's lines for the run's output (`r`: measureReportCli's result, with `since`). */
export function reportLines(r) {
  const { realistic: a, large: l, since: s } = r;
  const lines = [
    `  ${a.lines.toLocaleString('en-US')} lines (${mib(a.bytes)}): report --json wall p50 ${secs(a.cli.wall.p50)} (${walls(a.cli)}), peak RSS ${mb(a.cli.peakRssMb)}`,
    `  ${l.lines.toLocaleString('en-US')} lines (${mib(l.bytes)}): report --json wall ${secs(l.cli.wall.p50)}, peak RSS ${mb(l.cli.peakRssMb)} (peak RSS from ${l.rssSource})`,
  ];
  if (l.jq)
    lines.push(
      `  ${l.jq.version}: ${secs(l.jq.wallMs)}; per-model figures ${l.jq.mismatches.length === 0 ? 'agree with the report' : `DIFFER: ${l.jq.mismatches.slice(0, 3).join('; ')}`}`,
    );
  else lines.push(`  jq: skipped (${r.jqSkipped})`);
  if (s)
    lines.push(
      `  --since 24h: wall p50 ${secs(s.oneDay.p50, 3)} on the last day alone, ${secs(s.history.p50, 3)} after ${s.days} days of rotated files (${mib(s.historyBytes)}, ${s.skipped} files not read): ratio ${s.ratio.toFixed(2)}; --since all on them ${secs(s.allMs)}`,
    );
  return lines;
}

/** The report benchmark's rows of the target table. */
export function reportTargetRows(r, targets) {
  const { realistic: a, large: l, since: s } = r;
  const rows = [
    {
      measure: `report --json through the CLI, a realistic ${a.lines.toLocaleString('en-US')}-line day`,
      value: secs(a.cli.wall.p50),
      baseline: `peak RSS ${mb(a.cli.peakRssMb)}`,
      target: 'reported',
      result: 'info',
      why: '',
    },
    {
      measure: `report --json through the CLI, ${l.lines.toLocaleString('en-US')} lines (${mib(l.bytes)}): wall and peak RSS`,
      value: `${secs(l.cli.wall.p50)}, ${mb(l.cli.peakRssMb)}`,
      baseline: '',
      target: 'reported',
      result: 'info',
      why: '',
    },
  ];
  if (s)
    rows.push({
      measure: `report --json --since 24h after ${s.days} days of rotated files, relative to the last day alone`,
      value: `${s.ratio.toFixed(2)} (${secs(s.history.p50, 3)})`,
      baseline: `last day alone ${secs(s.oneDay.p50, 3)}`,
      target: `<= ${targets.sinceRatio}`,
      result: s.ratio <= targets.sinceRatio ? 'PASS' : 'FAIL',
      why: `rotated files older than the window are not read: each costs a stat and a read of its last 64 KiB (--since all reads them all: ${secs(s.allMs)}).`,
    });
  return rows;
}

// `node bench/report-cli.mjs`: this benchmark alone (BENCH_QUICK=1 for a quick check of the harness).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const quick = process.env.BENCH_QUICK === '1';
  const plan = quick
    ? { realisticLines: 2_000, largeLines: 50_000, reps: 1 }
    : { realisticLines: 20_000, largeLines: 1_000_000, reps: 3 };
  const { measureSummaryWithSince } = await import('./report-since.mjs');
  const r = {
    ...(await measureReportCli({ ...plan, withJq: process.env.BENCH_JQ === '1' })),
    since: await measureSummaryWithSince(
      quick ? { days: 10, linesPerDay: 1_000, reps: 1 } : { days: 90, linesPerDay: 5_000, reps: 5 },
    ),
  };
  for (const line of reportLines(r)) process.stdout.write(`${line}\n`);
  for (const row of reportTargetRows(r, { sinceRatio: 1.25 }))
    process.stdout.write(`${row.result.padEnd(5)} ${row.measure}: ${row.value} (target ${row.target}; ${row.baseline})\n`);
}
