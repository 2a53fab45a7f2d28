import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_RECORD_SCHEMA_VERSION } from '../../../src/telemetry/run-record.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { sampleRecord } from '../../helpers/sample-record.js';
import { tempDir } from '../../helpers/temp-dir.js';

const dir = tempDir('run-record-v2-');

/** A v1 line as servers wrote it before `usage` existed. */
function v1Line(overrides: Record<string, unknown> = {}): string {
  const { usage: _usage, ...rest } = sampleRecord();
  return JSON.stringify({ ...rest, v: 1, ...overrides });
}

describe('runs.jsonl schema v2', () => {
  it('is version 2 and carries usage right after thinking_chars', () => {
    expect(RUN_RECORD_SCHEMA_VERSION).toBe(2);
    const keys = Object.keys(sampleRecord());
    expect(keys.indexOf('usage')).toBe(keys.indexOf('thinking_chars') + 1);
    expect(Object.keys(sampleRecord().usage)).toEqual([
      'prompt_tokens',
      'output_tokens',
      'tokens_per_second',
      'prompt_tokens_per_second',
      'load_ms',
      'total_ms',
    ]);
  });

  it('the report reads a log that mixes v1 and v2 lines', async () => {
    const file = path.join(dir, 'runs.jsonl');
    writeFileSync(
      file,
      [v1Line({ status: 'ok' }), v1Line({ status: 'timeout' }), JSON.stringify(sampleRecord()), JSON.stringify(sampleRecord())]
        .map((line) => `${line}\n`)
        .join(''),
    );
    const summary = await summarizeRuns([file]);
    expect(summary.total_runs).toBe(4);
    expect(summary.total_ok).toBe(3);
  });
});
