import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildReportCharts } from '../../../src/report/report-charts.js';
import { renderReportText } from '../../../src/report/render-text.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { NOW, record } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** Task ids, models and statuses are read from the log: Object.prototype's member names among them. */
describe('report with Object.prototype member names in the log', () => {
  it('counts them as ordinary names and never reads a prototype member as a count', async () => {
    const dir = tempDir('report-proto-');
    const file = path.join(dir, 'runs.jsonl');
    const lines = [
      record({ model: 'constructor', task_id: 'toString', status: 'constructor', escalate: true, escalation_reason: 'x' }),
      record({ model: 'valueOf', task_id: 'hasOwnProperty', status: 'toString' }),
      record({ model: 'valueOf', task_id: '__proto__', status: 'ok' }),
    ];
    writeFileSync(file, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
    const summary = await summarizeRuns([file], {}, { now: NOW });
    const byModel = new Map(summary.models.map((m) => [m.model.replace(/:latest$/, ''), m]));
    expect(byModel.get('constructor')?.runs).toBe(1);
    expect(byModel.get('valueof')?.runs).toBe(2);
    const text = renderReportText(summary);
    expect(text).not.toMatch(/function|NaN|\[object/);
    expect(Object.getPrototypeOf(byModel.get('valueof')!.failures)).toBeNull();
    expect(byModel.get('valueof')?.failures.toString).toBe(1);
    const charts = buildReportCharts(summary);
    expect(charts.tokens).toBeNull(); // no usage in these lines
    const json = JSON.stringify({ ...charts, tokens: undefined });
    expect(json).not.toMatch(/null|NaN/);
    expect(json).not.toContain('function');
  });
});
