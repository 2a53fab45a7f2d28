import { beforeAll, describe, expect, it } from 'vitest';

import { renderReportText } from '../../../src/report/render-text.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import type { RunsSummary } from '../../../src/report/summary-schema.js';
import { DAY_FACTS, DAY_NOW, realisticDayLines, writeRealisticDay } from '../../helpers/realistic-day.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
let summary: RunsSummary;

beforeAll(async () => {
  dir = tempDir('report-day-');
  summary = await summarizeRuns([writeRealisticDay(dir)], {}, { now: DAY_NOW });
  if (process.env.SHOW_REPORT === '1') process.stderr.write(renderReportText(summary));
});

describe('a realistic day (test/helpers/realistic-day.ts)', () => {
  it('is about 300 runs of 5 models, v2 lines mixed with v1 ones and control records', () => {
    const lines = realisticDayLines();
    expect(lines).toEqual(realisticDayLines()); // seeded: the same day every time
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.filter((r) => r.v === 1)).toHaveLength(
      DAY_FACTS.v1Lines + parsed.filter((r) => r.v === 1 && r.status === 'ok' && r.retry_count === 1).length,
    );
    expect(
      parsed
        .filter((r) => r.kind === 'control')
        .map((r) => r.action)
        .sort(),
    ).toEqual(['reset_circuit', 'reset_task', 'status']);
    expect(summary.total_runs).toBeGreaterThan(250);
    expect(summary.total_runs).toBeLessThan(350);
    expect(summary.models.map((m) => m.model).sort()).toEqual([
      'deepseek-r1:14b',
      'gemma3:4b',
      'llama3.2:latest',
      'qwen2.5-coder:7b',
      'qwen3:8b',
    ]);
  });
});
