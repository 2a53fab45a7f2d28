// Benchmark 5 (issue 9 §3): `report --json` through the real CLI on a generated 1M-line runs.jsonl,
// next to its floor: a bare Node loop that only reads the same file and JSON.parses every line
// (bench/jsonparse-floor.mjs). Both are separate `node` processes (start-up included in both),
// alternated REPS times; wall time and peak RSS per run (see measureNodeProcess in lib.mjs).
// With BENCH_JQ=1 jq computes the same per-model figures on the same file and they are compared.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { BENCH_DIR, SERVER_ENTRY, makeTempDir, measureNodeProcess, removeTempDir, summarize } from './lib.mjs';
import { JQ_PROGRAM, compare, findJq, generateRunsJsonl, jqVersion, runReportCli } from './report-vs-jq.mjs';
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';

/**
 * @param {{ lines: number, reps: number, withJq: boolean }} options
 */
export async function measureReportCli({ lines, reps, withJq }) {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
  const dir = makeTempDir('report');
  try {
    const file = path.join(dir, 'runs.jsonl');
    const gen = generateRunsJsonl(file, lines);
    const runs = { cli: [], floor: [] };
    let summary = null;
    for (let rep = 0; rep < reps; rep += 1) {
      const order = rep % 2 === 0 ? ['cli', 'floor'] : ['floor', 'cli'];
      for (const which of order) {
        if (which === 'cli') {
          const r = await runReportCli(dir);
          summary = JSON.parse(r.stdout); // a report that is not JSON is an error, not a figure
          runs.cli.push(r);
        } else {
          const r = await measureNodeProcess(path.join(BENCH_DIR, 'jsonparse-floor.mjs'), [file]);
          const parsed = JSON.parse(r.stdout).lines;
          if (parsed !== lines) throw new Error(`the JSON.parse floor read ${parsed} lines, expected ${lines}`);
          runs.floor.push(r);
        }
      }
    }
    // Nothing lost: where the report states its run count, it must be every line.
    const counted = typeof summary?.total_runs === 'number' ? summary.total_runs : null;
    if (counted !== null && counted !== gen.runs)
      throw new Error(
        `report --json counted ${counted} runs, the log has ${gen.runs} (and ${lines - gen.runs} absorbed retries)`,
      );

    let jq = null;
    const jqBin = withJq ? findJq() : null;
    if (jqBin) {
      const t0 = performance.now();
      const stdout = await new Promise((resolve, reject) =>
        execFile(jqBin, ['-nR', '-c', JQ_PROGRAM, file], { maxBuffer: 64 << 20 }, (error, out) =>
          error ? reject(error) : resolve(out),
        ),
      );
      jq = { version: jqVersion(jqBin), wallMs: performance.now() - t0, mismatches: compare(summary, JSON.parse(stdout)) };
    }
    const stats = (list) => ({
      wall: summarize(list.map((r) => r.wallMs)),
      peakRssMb: Math.max(...list.map((r) => r.rssMb)),
      walls: list.map((r) => r.wallMs),
    });
    const cli = stats(runs.cli);
    const floor = stats(runs.floor);
    return {
      lines,
      reps,
      bytes: statSync(file).size,
      genMs: gen.ms,
      rssSource: runs.cli[0].rssSource,
      counted,
      cli,
      floor,
      ratio: cli.wall.p50 / floor.wall.p50,
      jq,
      jqSkipped: jqBin ? null : withJq ? 'jq not found on this machine' : 'jq comparison off (BENCH_JQ=1 adds it; ~40 s here)',
    };
  } finally {
    removeTempDir(dir);
  }
}
