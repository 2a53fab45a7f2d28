import { describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { duration, renderReportText } from '../../../src/report/render-text.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { BASIC_DIR, NOW } from './fixtures.js';

const basic = async () => summarizeRuns(await listRunLogFiles(BASIC_DIR), {}, { now: NOW });

describe('renderReportText', () => {
  it('shows the header, a row per model with every failure kind, and the escalated tasks', async () => {
    const text = renderReportText(await basic());
    const lines = text.split('\n');
    expect(lines[0]).toBe('Runs: 14, ok 7 (50.0%), escalations 3');
    expect(text).toContain('Range: 2025-11-22 10:00:00 to 2025-11-22 10:12:00 UTC');
    expect(text).toContain('Files: runs.jsonl');
    expect(text).toContain('Skipped lines: 2 (torn or unreadable), 1 blank, 1 JSON object(s) that are not runs');
    const header = lines.find((line) => line.startsWith('model '))!;
    expect(header.split(/\s{2,}/)).toEqual([
      'model',
      'runs',
      'ok %',
      'timeouts',
      'empty_output', // the README's status order
      'crashed',
      'circuit_open',
      'invalid_input',
      'escalations',
      'circuit openings',
      'p50',
      'p95',
      'max',
      'queue p50',
    ]);
    const qwen = lines.find((line) => line.startsWith('qwen3:8b '))!.split(/\s+/);
    expect(qwen).toEqual(['qwen3:8b', '9', '55.6%', '3', '0', '1', '0', '0', '1', '0', '1.50s', '2m00s', '2m00s', '0ms']);
    expect(text).toContain('Escalated tasks (2, most recent first)');
    expect(lines.find((line) => line.startsWith('t-beta '))).toMatch(
      /^t-beta\s+qwen3:8b\s+5\s+ok\s+max_retries_exceeded\s+2025-11-22 10:12:00\s+no answer within 120000 ms; killed$/,
    );
    expect(text).toContain('1 escalation(s) without a task_id.');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('prints filters when there are some, and says when nothing matches', async () => {
    const summary = await summarizeRuns(
      await listRunLogFiles(BASIC_DIR),
      { model: 'nope:1b', since: new Date('2025-11-22T10:00:00Z') },
      { now: NOW },
    );
    const text = renderReportText(summary);
    expect(text).toContain('Filters: since 2025-11-22 10:00:00 UTC, model nope:1b');
    expect(text).toContain('No runs match.');
  });

  it('never passes control characters from the log to the terminal; colours only when asked', async () => {
    const summary = await basic();
    const tampered = {
      ...summary,
      escalated_tasks: [
        { ...summary.escalated_tasks[0]!, last_error: 'bad\u001b[2J\u0007 text\nnext line', task_id: 't\u001b]0;x' },
      ],
    };
    const plain = renderReportText(tampered);
    expect(plain).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(plain).toContain('bad?[2J? text next line');
    const coloured = renderReportText(summary, { color: true });
    expect(coloured).toContain('\u001b[31m'); // failures in red
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(renderReportText(summary));
  });

  it('cuts long error texts to the requested width', async () => {
    const summary = await basic();
    const long = { ...summary, escalated_tasks: [{ ...summary.escalated_tasks[0]!, last_error: 'x'.repeat(500) }] };
    expect(renderReportText(long, { errorWidth: 20 })).toContain(`${'x'.repeat(17)}...`);
    expect(renderReportText(long, { errorWidth: 20 })).not.toContain('x'.repeat(18));
  });
});

describe('duration', () => {
  it.each([
    [null, '-'],
    [0, '0ms'],
    [2.46, '2.5ms'],
    [850, '850ms'],
    [4210, '4.21s'],
    [12_345, '12.3s'],
    [125_000, '2m05s'],
    [3_725_000, '1h02m'],
  ])('%j -> %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});
