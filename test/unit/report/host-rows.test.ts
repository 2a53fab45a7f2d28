import { rm } from 'node:fs/promises';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { runsSummarySchema, type RunsSummary } from '../../../src/report/summary-schema.js';
import { NOW, record, writeLog } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

let tmp: string;
beforeEach(() => {
  tmp = tempDir('report-hosts-');
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

const line = (host: string | undefined, status: string, more: Record<string, unknown> = {}) =>
  record({ v: 2, model: 'qwen3:8b', ts: '2025-11-21T10:00:00.000Z', status, ...(host ? { host } : {}), ...more });

describe('runs, loads and failures per host', () => {
  it('counts each host: a failover line is an attempt and a failure there, not a run', async () => {
    const s = await summarize([
      line('gpu-box:11434', 'ollama_unreachable', { will_retry: true }),
      line('127.0.0.1:11434', 'ok', { usage: { load_ms: 3000 } }),
      line('127.0.0.1:11434', 'ok', { usage: { load_ms: 5 } }),
      line('gpu-box:11434', 'ok'),
      line(undefined, 'ok'),
    ]);
    expect(s.hosts).toEqual([
      { host: '127.0.0.1:11434', attempts: 2, runs: 2, ok: 2, failures: 0, unreachable: 0, loads: 1 },
      { host: 'gpu-box:11434', attempts: 2, runs: 1, ok: 1, failures: 1, unreachable: 1, loads: 0 },
    ]);
  });
});
