import { existsSync, readFileSync } from 'node:fs';
import { open, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { summarizeRuns } from '../../../src/report/summary.js';
import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { ollamaRunsSummaryTool } from '../../../src/tools/ollama-runs-summary.js';
import { record } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Months of rotated history must not make a summary of the last day slower: a rotated file whose
// records are all older than `since` is not read. The old files here are sparse (16 MiB each on
// paper, nothing on disk), so reading them would show in the bytes this process reads.

const DAY = 86_400_000;
const NOW = new Date('2026-03-01T12:00:00.000Z');
const HISTORY_DAYS = 90;
const OLD_FILE_BYTES = 16 * 1024 * 1024;

let dir: string;

/** `ts` of the n-th day back from NOW, at the given hour. */
const dayBack = (days: number, hour = 10): number =>
  Date.parse(`${new Date(NOW.getTime() - days * DAY).toISOString().slice(0, 10)}T${String(hour).padStart(2, '0')}:00:00.000Z`);

beforeAll(async () => {
  dir = tempDir('since-window-');
  // One rotated file per day for 90 days: a hole of 16 MiB, then one run at 10:00; last written then.
  for (let days = HISTORY_DAYS; days >= 1; days--) {
    const at = dayBack(days);
    const name = `runs-${new Date(at).toISOString().slice(0, 10)}-001.jsonl`;
    const handle = await open(join(dir, name), 'w');
    await handle.truncate(OLD_FILE_BYTES);
    await handle.write(
      `\n${JSON.stringify(record({ ts: new Date(at).toISOString(), run_id: name, status: 'timeout' }))}\n`,
      OLD_FILE_BYTES,
    );
    await handle.close();
    await utimes(join(dir, name), new Date(at), new Date(at));
  }
  // Today's active file: three runs in the last day.
  const today = `runs-${NOW.toISOString().slice(0, 10)}-001.jsonl`;
  const lines = [1, 2, 3].map((h) =>
    JSON.stringify(record({ ts: new Date(NOW.getTime() - h * 3_600_000).toISOString(), run_id: `today-${h}` })),
  );
  await writeFile(join(dir, today), `${lines.join('\n')}\n`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Bytes this process has read through read(2) and friends so far (Linux), or null. */
function bytesRead(): number | null {
  if (!existsSync('/proc/self/io')) return null;
  return Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
}

describe('a summary with since, on months of rotated files', () => {
  it('reads only the files that hold the window, and a few KB of each older one', async () => {
    const files = await listRunLogFiles(dir);
    expect(files).toHaveLength(HISTORY_DAYS + 1);
    const before = bytesRead();
    const summary = await summarizeRuns(files, { since: new Date(NOW.getTime() - DAY) }, { now: NOW });
    const after = bytesRead();
    expect(summary.files).toEqual([`runs-${NOW.toISOString().slice(0, 10)}-001.jsonl`]);
    expect(summary.files_skipped).toBe(HISTORY_DAYS);
    expect(summary.total_runs).toBe(3);
    expect(summary.skipped_lines).toBe(0); // no hole was read as a line
    // 90 files of 16 MiB: reading them would be 1.4 GiB. A tail of each is 90 x 64 KiB at most.
    if (before !== null && after !== null) expect(after - before).toBeLessThan(8 * 1024 * 1024);
  });

  it('reads every file that ends inside the window', async () => {
    const files = await listRunLogFiles(dir);
    const week = await summarizeRuns(files, { since: new Date(dayBack(7, 0)) }, { now: NOW });
    expect(week.files_skipped).toBe(HISTORY_DAYS - 7);
    expect(week.files).toHaveLength(8);
    expect(week.total_runs).toBe(7 + 3);
  });

  it('ollama_runs_summary with its default since=24h skips them too', async () => {
    const tool = ollamaRunsSummaryTool({ telemetryDir: dir, now: () => NOW });
    const before = bytesRead();
    const outcome = await tool.handle({ since: '24h', top: 10, response_format: 'detailed' } as never, {} as never);
    const after = bytesRead();
    const summary = outcome.structured as { files: string[]; files_skipped: number; total_runs: number };
    expect(summary.files_skipped).toBe(HISTORY_DAYS);
    expect(summary.total_runs).toBe(3);
    expect(outcome.text).toContain('90 older file(s) not read');
    if (before !== null && after !== null) expect(after - before).toBeLessThan(8 * 1024 * 1024);
  });
});
