import { rm } from 'node:fs/promises';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { ModelLoads } from '../../../src/report/model-loads.js';
import { readRunLine } from '../../../src/report/run-line.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { runsSummarySchema, type RunsSummary } from '../../../src/report/summary-schema.js';
import { NOW, record, writeLog } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

let tmp: string;
beforeEach(() => {
  tmp = tempDir('report-loads-');
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function summarize(lines: readonly Record<string, unknown>[]): Promise<RunsSummary> {
  await writeLog(tmp, 'runs.jsonl', lines);
  const summary = await summarizeRuns(await listRunLogFiles(tmp), {}, { now: NOW });
  runsSummarySchema.parse(summary);
  return summary;
}

/** A v2 line of `model` at `ts` whose usage says how long the load took. */
const run = (model: string, ts: string, loadMs: number | null, more: Record<string, unknown> = {}) =>
  record({ v: 2, model, ts, usage: { output_tokens: 10, load_ms: loadMs }, ...more });

/** `n` runs of two models taking turns on one day: every run reloads its model. */
function thrash(day: string, n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) =>
    run(i % 2 === 0 ? 'qwen2.5-coder:7b' : 'llama3.2', `${day}T10:${String(i).padStart(2, '0')}:00.000Z`, 3000),
  );
}

describe('model loads per day and model', () => {
  it('counts a day of thrash: a load for every run, with the load time summed', async () => {
    const s = await summarize(thrash('2025-11-21', 36));
    expect(s.timeline.loads).toEqual([
      { day: '2025-11-21', model: 'llama3.2:latest', loads: 18, load_ms: 54_000, runs: 18 },
      { day: '2025-11-21', model: 'qwen2.5-coder:7b', loads: 18, load_ms: 54_000, runs: 18 },
    ]);
    expect(s.timeline.loads_truncated).toBe(false);
  });

  it('lists no row for a day whose runs found their model loaded, and keeps days in UTC order', async () => {
    const warm = (ts: string) => run('qwen3:8b', ts, 9.84);
    const s = await summarize([
      run('qwen3:8b', '2025-11-22T00:00:01.000Z', 2500.4), // the day after, by UTC
      warm('2025-11-21T23:59:59.000Z'),
      warm('2025-11-21T08:00:00.000Z'),
      run('qwen3:8b', '2025-11-20T09:00:00.000Z', 1200),
      warm('2025-11-20T09:01:00.000Z'),
      warm('2025-11-22T00:01:00.000Z'),
    ]);
    expect(s.timeline.loads).toEqual([
      { day: '2025-11-20', model: 'qwen3:8b', loads: 1, load_ms: 1200, runs: 2 },
      { day: '2025-11-22', model: 'qwen3:8b', loads: 1, load_ms: 2500, runs: 2 },
    ]);
  });

  it('takes cold_load when a line has it, else usage.load_ms of 100 ms or more; lines without either count no load', async () => {
    const ts = '2025-11-22T10:00:00.000Z';
    const s = await summarize([
      record({ model: 'old:1b', ts }), // v1: no usage, no cold_load
      record({ v: 2, model: 'old:1b', ts, usage: { output_tokens: 3, load_ms: null } }),
      run('m:1b', ts, 100), // at the bound: a load
      run('m:1b', ts, 99.9),
      run('m:1b', ts, 50, { cold_load: true }), // the line's own word wins
      run('m:1b', ts, 5000, { cold_load: false }),
      record({ v: 2, model: 'm:1b', ts, cold_load: true }), // a load of unknown time
      run('m:1b', ts, 'slow' as unknown as number), // mistyped: no load
      run('m:1b', ts, 700, { cold_load: 'yes' }), // mistyped cold_load: load_ms decides
      run('m:1b', 'yesterday', 3000), // no day: left out
    ]);
    expect(s.timeline.loads).toEqual([{ day: '2025-11-22', model: 'm:1b', loads: 4, load_ms: 850, runs: 7 }]);
  });

  it('counts the loads of attempts the server retried, but not them as runs', async () => {
    const ts = '2025-11-22T10:00:00.000Z';
    const s = await summarize([
      run('big:70b', ts, 20_000, { status: 'start_timeout', will_retry: true, chain_id: 'c', chain_step: 0 }),
      run('small:1b', ts, 800, { chain_id: 'c', chain_step: 1 }),
    ]);
    expect(s.timeline.loads).toEqual([
      { day: '2025-11-22', model: 'big:70b', loads: 1, load_ms: 20_000, runs: 0 },
      { day: '2025-11-22', model: 'small:1b', loads: 1, load_ms: 800, runs: 1 },
    ]);
  });

  it('keeps the most recent days, in whole days, and says when it left older ones out', () => {
    const line = (day: number, model: string) =>
      readRunLine(run(model, new Date(Date.UTC(2025, 10, day, 12)).toISOString(), 2000))!;
    const loads = new ModelLoads(3, 4);
    for (const day of [20, 21, 22, 23]) loads.add(line(day, 'a:1b'));
    loads.add(line(20, 'late:1b')); // older than every day kept: dropped
    expect(loads.result().rows.map((r) => r.day)).toEqual(['2025-11-21', '2025-11-22', '2025-11-23']);
    expect(loads.result().truncated).toBe(true);

    const rows = new ModelLoads(10, 4);
    for (const model of ['a:1b', 'b:1b', 'c:1b']) rows.add(line(22, model));
    for (const model of ['a:1b', 'b:1b']) rows.add(line(23, model));
    expect(rows.result()).toEqual({
      rows: [expect.objectContaining({ day: '2025-11-23' }), expect.objectContaining({ day: '2025-11-23' })],
      truncated: true, // 22 November's 3 rows would pass the 4 rows: the day is left out whole
    });
  });
});
