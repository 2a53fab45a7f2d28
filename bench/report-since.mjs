// Benchmark 6: a summary of the last day must not get slower as months of rotated history pile up.
// `report --json --since 24h` (the code path of `ollama_runs_summary`'s default since=24h) through the
// CLI, on a directory holding only the last day, and on one holding the same day after `days` - 1
// older days (one rotated file per day, dated and timed as the server leaves them), alternated.
// For contrast, `--since all` on the long history (it reads every file).
import { linkSync, utimesSync, statSync } from 'node:fs';
import path from 'node:path';
import { makeTempDir, measureNodeProcess, removeTempDir, SERVER_ENTRY, summarize } from './lib.mjs';
import { generateRunsJsonl } from './report-vs-jq.mjs';

const DAY_MS = 86_400_000;

/**
 * @param {{ days: number, linesPerDay: number, reps: number }} plan
 */
export async function measureSummaryWithSince({ days, linesPerDay, reps }) {
  const oneDay = makeTempDir('since-1d');
  const history = makeTempDir('since-history');
  try {
    const now = Date.now();
    let historyBytes = 0;
    let lastRuns = 0;
    // Day 1 ends now (the active file); day k ends k - 1 days ago. Each file is named after its first day.
    for (let day = days; day >= 1; day -= 1) {
      const startMs = now - day * DAY_MS;
      const name = `runs-${new Date(startMs).toISOString().slice(0, 10)}-001.jsonl`;
      const file = path.join(history, name);
      const gen = generateRunsJsonl(file, linesPerDay, 42 + day, startMs);
      const end = new Date(startMs + DAY_MS);
      utimesSync(file, end, end); // last written when its last record was
      historyBytes += statSync(file).size;
      if (day === 1) {
        linkSync(file, path.join(oneDay, name));
        lastRuns = gen.runs;
      }
    }
    const walls = { oneDay: [], history: [] };
    for (let rep = 0; rep < reps; rep += 1) {
      for (const which of rep % 2 === 0 ? ['oneDay', 'history'] : ['history', 'oneDay']) {
        const r = await report(which === 'oneDay' ? oneDay : history, '24h');
        if (r.summary.total_runs > lastRuns * 1.01 || r.summary.files.length !== 1)
          throw new Error(
            `--since 24h read ${r.summary.files.length} file(s), ${r.summary.total_runs} runs; expected the last day's file`,
          );
        walls[which].push(r.wallMs);
      }
    }
    const all = await report(history, 'all');
    return {
      days,
      linesPerDay,
      historyBytes,
      oneDay: summarize(walls.oneDay),
      history: summarize(walls.history),
      ratio: summarize(walls.history).p50 / summarize(walls.oneDay).p50,
      skipped: (await report(history, '24h')).summary.files_skipped,
      allMs: all.wallMs,
      allRssMb: all.rssMb,
    };
  } finally {
    removeTempDir(oneDay);
    removeTempDir(history);
  }
}

async function report(dir, since) {
  const r = await measureNodeProcess(SERVER_ENTRY, ['report', '--json', '--since', since, '--dir', dir]);
  return { ...r, summary: JSON.parse(r.stdout) };
}
