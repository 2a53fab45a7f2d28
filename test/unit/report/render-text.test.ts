import { describe, expect, it } from 'vitest';

import { rm } from 'node:fs/promises';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { duration } from '../../../src/report/format.js';
import { renderReportText } from '../../../src/report/render-text.js';
import { summarizeRuns } from '../../../src/report/summary.js';
import { BASIC_DIR, NOW, record, writeLog } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

const basic = async () => summarizeRuns(await listRunLogFiles(BASIC_DIR), {}, { now: NOW });

describe('renderReportText', () => {
  it('shows the header, attention, causes, and a row per model with every failure kind', async () => {
    const text = renderReportText(await basic(), { width: 200 }); // no table split
    const lines = text.split('\n');
    expect(lines[0]).toBe('Runs: 14, ok 7 (50.0%), escalations 3');
    expect(text).toContain('Range: 2025-11-22 10:00:00 to 2025-11-22 10:12:00 UTC');
    expect(text).toContain('Files: runs.jsonl');
    expect(text).toContain('Skipped lines: 2 (torn or unreadable), 1 blank, 1 JSON object(s) that are not runs');
    // Attention first: t-beta answered after its escalation, t-delta did not.
    const attention = lines.indexOf('Needs attention now');
    expect(attention).toBeGreaterThan(0);
    expect(attention).toBeLessThan(lines.findIndex((line) => line.startsWith('Escalations by cause')));
    expect(lines.find((line) => line.startsWith('t-delta '))).toMatch(
      /^t-delta\s+llama3.2:latest\s+circuit_open\s+2025-11-22 10:08:00\s+0$/,
    );
    expect(lines.some((line) => line.startsWith('t-beta '))).toBe(false);
    const header = lines.find((line) => line.startsWith('model ') && line.includes('runs'))!;
    expect(header.split(/\s{2,}/)).toEqual([
      'model',
      'runs',
      'ok %',
      'timeouts',
      'empty_output', // the failure table's status order
      'crashed',
      'circuit_open',
      'invalid_input',
      'escalations',
      'circuit openings',
    ]);
    const qwen = lines.find((line) => line.startsWith('qwen3:8b ') && line.includes('%'))!.split(/\s+/);
    expect(qwen).toEqual(['qwen3:8b', '9', '55.6%', '3', '0', '1', '0', '0', '1', '0']);
    // Latency of answers only: qwen3's timeouts (120 s) are time lost, not its p95.
    const latency = lines.find((line) => line.startsWith('qwen3:8b ') && line.includes('ms'))!.split(/\s+/);
    expect(latency).toEqual(['qwen3:8b', '5', '1.00s', '4.00s', '4.00s', '0ms', '4', '6m01s']);
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
      escalation_causes: [
        { ...summary.escalation_causes[0]!, error: 'bad\u001b[2J\u0007 text\nnext line', model: 'm\u001b]0;x' },
      ],
    };
    const plain = renderReportText(tampered);
    expect(plain).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(plain).toContain('bad\\x1b[2J\\x07 text next line');
    const coloured = renderReportText(summary, { color: true });
    expect(coloured).toContain('\u001b[31m'); // failures in red
    expect(coloured.replace(/\u001b\[\d+m/g, '')).toBe(renderReportText(summary));
  });

  it('cuts long error texts to the requested width', async () => {
    const summary = await basic();
    const long = { ...summary, escalation_causes: [{ ...summary.escalation_causes[0]!, error: 'x'.repeat(500) }] };
    expect(renderReportText(long, { errorWidth: 20 })).toContain(`${'x'.repeat(17)}...`);
    expect(renderReportText(long, { errorWidth: 20 })).not.toContain('x'.repeat(18));
  });

  it.each([100, 80, 60])('fits %i columns: no line is longer, long names and errors included', async (width) => {
    const summary = await basic();
    const wide = {
      ...summary,
      models: summary.models.map((m, i) => ({
        ...m,
        model: `registry.example.com/team/${'very-long-model-name-'.repeat(3)}${i}:q4`,
      })),
      escalation_causes: summary.escalation_causes.map((c) => ({
        ...c,
        error: 'e '.repeat(300),
        example_tasks: ['t'.repeat(150)],
      })),
    };
    for (const text of [renderReportText(summary, { width }), renderReportText(wide, { width })]) {
      const longest = Math.max(...text.split('\n').map((line) => line.length));
      expect(longest).toBeLessThanOrEqual(width);
    }
    // Split tables repeat the key column: every model is still named in each part.
    const text = renderReportText(wide, { width });
    expect(text.split('\n').filter((line) => line.startsWith('registry.example.com/')).length).toBeGreaterThanOrEqual(
      3 * wide.models.length,
    );
  });
});

describe('long paths of several dirs', () => {
  /** The header sentence that starts with `start`, its continuation lines joined. */
  const sentenceLines = (text: string, start: string) => {
    const lines = text.split('\n');
    const at = lines.findIndex((line) => line.startsWith(start));
    const end = lines.findIndex((line, i) => i > at && !line.startsWith('  '));
    return lines.slice(at, end);
  };

  it('two dirs that differ only at the end print apart, within the width, with their ends', async () => {
    const root = `/tmp/${'t'.repeat(94)}/ollama-runner-e2e-AbC123/day`;
    const dirs = [`${root}/alice`, `${root}/bob`];
    const summary = { ...(await basic()), dirs, files: dirs.map((dir) => `${dir}/runs.jsonl`) };
    for (const width of [100, 80, 60]) {
      const text = renderReportText(summary, { width });
      const dirLines = sentenceLines(text, 'Dirs:');
      expect(dirLines.every((line) => line.length <= width)).toBe(true);
      const shown = dirLines
        .map((line) => line.trim())
        .join(' ')
        .replace(/^Dirs: /, '')
        .split(/,\s+/);
      expect(shown).toHaveLength(2);
      expect(shown[0]).not.toBe(shown[1]);
      expect(shown[0]).toMatch(/^\/tmp\/….*\/day\/alice$/);
      expect(shown[1]).toMatch(/^\/tmp\/….*\/day\/bob$/);
      const files = sentenceLines(text, 'Files:').join(' ');
      expect(files).toMatch(/\/alice\/runs\.jsonl, +\/tmp\/….*\/bob\/runs\.jsonl$/);
    }
  });

  it('paths no cut can tell apart are broken over lines, whole', async () => {
    const dirs = [`/${'p'.repeat(100)}A${'s'.repeat(100)}`, `/${'p'.repeat(100)}B${'s'.repeat(100)}`];
    const text = renderReportText({ ...(await basic()), dirs }, { width: 60 });
    const lines = sentenceLines(text, 'Dirs:');
    expect(lines.every((line) => line.length <= 60)).toBe(true);
    expect(lines.map((line) => line.trim()).join('')).toBe(`Dirs:${dirs.join(',')}`);
  });
});

describe('a foreign log with escapes in its fields', () => {
  it('prints no control character, not even in a column header made of an unknown status', async () => {
    const dir = tempDir('report-hostile-');
    try {
      const osc52 = '\u001b]52;c;ZXZpbA==\u0007';
      const file = await writeLog(dir, 'runs.jsonl', [
        record({
          status: `crashed${osc52}\u001b[2J`,
          model: `evil\u001b]0;owned\u0007:1b\u202e`,
          task_id: `t\u009b2J`,
          error: `e\u001b\u001b[0m[2J`,
        }),
        record({ status: 'timeout\u001b[31m', escalate: true, escalation_reason: `why\u001b[1m`, task_id: 't\u001b[K' }),
        { v: 2, kind: 'control', ts: '2025-11-22T10:05:00.000Z', action: 'reset_task', task_id: 'x\u001b[2J', model: null },
      ]);
      const summary = await summarizeRuns([file], {}, { now: NOW });
      expect(summary.models.flatMap((m) => Object.keys(m.failures)).some((kind) => kind.includes('\u001b'))).toBe(true);
      for (const width of [200, 60]) {
        const text = renderReportText(summary, { width });
        expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
        expect(text).toContain('crashed\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J'); // shown, not obeyed
        const coloured = renderReportText(summary, { width, color: true });
        expect(coloured.replace(/\u001b\[\d+m/g, '')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
      }
      expect(renderReportText(summary, { width: 200 })).toContain('evil\\x1b]0;owned\\x07:1b\\u202e');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('model loads', () => {
  /** `runs` v2 lines of `model` on `day`, the first `loads` of them loading it for 3 s. */
  const day = (model: string, date: string, runs: number, loads: number) =>
    Array.from({ length: runs }, (_, i) =>
      record({
        v: 2,
        model,
        ts: `${date}T10:${String(i).padStart(2, '0')}:00.000Z`,
        usage: { output_tokens: 5, load_ms: i < loads ? 3000 : 8.5 },
      }),
    );

  async function summaryOf(lines: readonly Record<string, unknown>[]) {
    const dir = tempDir('report-loads-text-');
    try {
      return await summarizeRuns([await writeLog(dir, 'runs.jsonl', lines)], {}, { now: NOW });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('lists the days x models with the most loads, and says the thrash plainly', async () => {
    const summary = await summaryOf([
      ...day('qwen2.5-coder:7b', '2025-11-21', 20, 1), // loaded once, kept loaded: fine
      ...day('qwen2.5-coder:7b', '2025-11-22', 18, 18),
      ...day('llama3.2', '2025-11-22', 10, 4),
    ]);
    const text = renderReportText(summary, { width: 100 });
    const lines = text.split('\n');
    const at = lines.indexOf('Model loads per day (UTC): 23 load(s) of 2 model(s)');
    expect(at).toBeGreaterThan(lines.findIndex((line) => line.startsWith('Tokens per model')));
    expect(lines.slice(at + 1, at + 5).map((line) => line.split(/\s{2,}/))).toEqual([
      ['model', 'day', 'loads', 'runs', 'load time'],
      ['qwen2.5-coder:7b', '2025-11-22', '18', '18', '54.0s'],
      ['llama3.2:latest', '2025-11-22', '4', '10', '12.0s'],
      ['qwen2.5-coder:7b', '2025-11-21', '1', '20', '3.00s'],
    ]);
    expect(lines[at + 5]).toBe('qwen2.5-coder:7b loaded 18 times for 18 runs on 2025-11-22 (54.0s loading)');
    expect(text).not.toContain('llama3.2:latest loaded'); // 4 loads for 10 runs: not one for every other run
    expect(text).toContain('is thrash: models pushing each other out of memory');
    expect(lines.filter((line) => line.length > 100)).toEqual([]);

    const coloured = renderReportText(summary, { width: 100, color: true });
    expect(coloured).toContain('\u001b[33mqwen2.5-coder:7b loaded 18 times'); // yellow
    for (const line of renderReportText(summary, { width: 60 }).split('\n')) expect(line.length).toBeLessThanOrEqual(60);
  });

  it('has no section when nothing was loaded, nor in the compact summary, which has no timeline', async () => {
    const warm = await summaryOf(day('qwen3:8b', '2025-11-22', 5, 0));
    expect(warm.timeline.loads).toEqual([]);
    expect(renderReportText(warm)).not.toContain('Model loads');
    const loaded = await summaryOf(day('qwen3:8b', '2025-11-22', 5, 5));
    const { timeline: _timeline, ...compact } = loaded;
    expect(renderReportText(loaded)).toContain('Model loads');
    expect(renderReportText(compact)).not.toContain('Model loads');
  });

  it('keeps the table to 10 rows and the sentences to 3, saying how many more', async () => {
    const lines = Array.from({ length: 12 }, (_, i) => day(`m${i}:1b`, '2025-11-22', 4, 4)).flat();
    const text = renderReportText(await summaryOf(lines), { width: 100 });
    expect(text.split('\n').filter((line) => /^m\d+:1b\s+2025-11-22/.test(line))).toHaveLength(10);
    expect(text).toContain('2 more: report --json lists them (timeline.loads).');
    expect(text.split('\n').filter((line) => /^m\d+:1b loaded 4 times for 4 runs/.test(line))).toHaveLength(3);
    expect(text).toContain('and 9 more day(s) x model(s) like these.');
  });

  it('shows a model name from the log as escapes', async () => {
    const text = renderReportText(await summaryOf(day('evil\u001b[2J:1b\u202e', '2025-11-22', 3, 3)), { width: 100 });
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(text).toContain('evil\\x1b[2J:1b\\u202e loaded 3 times for 3 runs');
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
