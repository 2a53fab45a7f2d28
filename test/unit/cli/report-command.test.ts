import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { REPORT_USAGE, runReportCommand } from '../../../src/cli/report-command.js';
import { runsSummarySchema } from '../../../src/report/summary-schema.js';
import { BASIC_DIR, NOW, ROTATED_DIR } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

async function run(argv: string[], telemetryDir = BASIC_DIR) {
  let out = '';
  let err = '';
  const code = await runReportCommand(argv, {
    telemetryDir,
    now: NOW,
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
  });
  return { code, out, err };
}

let tmp: string;
beforeEach(async () => {
  tmp = tempDir('report-command-');
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('runReportCommand', () => {
  it('prints the text report of the telemetry directory and exits 0', async () => {
    const { code, out, err } = await run([]);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out).toContain('Runs: 14, ok 7 (50.0%), escalations 3');
    expect(out).toContain('qwen3:8b');
    expect(out).toContain('t-beta');
    expect(out).not.toContain('\u001b['); // no colours unless asked
  });

  it('--json prints one parseable document with the documented shape', async () => {
    const { code, out } = await run(['--json']);
    expect(code).toBe(0);
    const summary = runsSummarySchema.parse(JSON.parse(out));
    expect(summary.total_runs).toBe(14);
    expect(out.endsWith('}\n')).toBe(true);
  });

  it('--dir overrides the telemetry directory; filters apply, in both spellings', async () => {
    const a = JSON.parse((await run(['--json', '--dir', ROTATED_DIR], '/nonexistent')).out);
    expect(a.files).toHaveLength(4);
    const b = JSON.parse(
      (await run(['--json', '--since=2025-11-22T10:05:00Z', '--model', 'llama3.2', '--status', 'ok,empty_output'])).out,
    );
    expect(b.filters).toEqual({
      since: '2025-11-22T10:05:00.000Z',
      model: 'llama3.2',
      task: null,
      status: ['ok', 'empty_output'],
    });
    expect(b.total_runs).toBe(3);
    const c = JSON.parse((await run(['--json', '--task', 't-beta', '--since', '2h'])).out); // since 10:00 with NOW 12:00
    expect(c.total_runs).toBe(5);
    expect(JSON.parse((await run(['--json', '--since', 'all'])).out).total_runs).toBe(14);
  });

  it('--color colours the text report', async () => {
    const { code, out } = await run(['--color']);
    expect(code).toBe(0);
    expect(out).toContain('\u001b[1m');
  });

  it('--help prints the usage on out and exits 0', async () => {
    const { code, out, err } = await run(['--help']);
    expect([code, out, err]).toEqual([0, REPORT_USAGE, '']);
    expect((await run(['-h'])).code).toBe(0);
  });

  it('a --dir that does not exist exits 1 naming it (a typo is not a quiet day)', async () => {
    const missing = join(tmp, 'none');
    const { code, out, err } = await run(['--json', '--dir', BASIC_DIR, '--dir', missing]);
    expect([code, out]).toEqual([1, '']);
    expect(err).toBe(`report: no such directory: ${missing} (given with --dir)\n`);
  });

  it('a telemetry directory not made yet (no run so far) is an empty report', async () => {
    const { code, out } = await run(['--json'], join(tmp, 'none'));
    expect(code).toBe(0);
    expect(JSON.parse(out).total_runs).toBe(0);
    expect((await run([], join(tmp, 'none'))).out).toContain('No runs match.');
  });

  it('exits 1 when the logs cannot be read (a --dir that is a file)', async () => {
    const file = join(tmp, 'runs.jsonl');
    await writeFile(file, '{}\n');
    const { code, out, err } = await run(['--dir', file]);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toMatch(/^report: could not read the run logs in .*runs\.jsonl: .*ENOTDIR/);
  });

  it('--html FILE writes one self-contained page and says so on out; filters apply', async () => {
    const file = join(tmp, 'report.html');
    const { code, out, err } = await run(['--html', file, '--model', 'qwen3:8b']);
    expect([code, out, err]).toEqual([0, `wrote ${file} (9 runs)\n`, '']);
    const html = await readFile(file, 'utf8');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('Chart.js v4'); // the library is inlined
    const embedded = /<script type="application\/json" id="report-summary">(.*?)<\/script>/s.exec(html)![1]!;
    expect(JSON.parse(embedded)).toMatchObject({ total_runs: 9, filters: { model: 'qwen3:8b' } });
    expect(html).toContain('model qwen3:8b'); // the header names the filter
  });

  it('--html exits 1 when FILE cannot be written, and 1 when the logs cannot be read (nothing written)', async () => {
    const missing = join(tmp, 'no-such-dir', 'report.html');
    const a = await run(['--html', missing]);
    expect(a.code).toBe(1);
    expect(a.out).toBe('');
    expect(a.err).toMatch(/^report: could not write the HTML report to .*report\.html: .*ENOENT/);

    const logFile = join(tmp, 'runs.jsonl');
    await writeFile(logFile, '{}\n');
    const target = join(tmp, 'r.html');
    const b = await run(['--html', target, '--dir', logFile]);
    expect(b.code).toBe(1);
    expect(b.err).toMatch(/^report: could not read the run logs in /);
    await expect(readFile(target)).rejects.toThrow(/ENOENT/);
  });

  it.each([
    [['--since', 'yesterday'], /^report: --since: expected a duration/],
    [['--since'], /^report: --since needs a value/],
    [['--since', '--json'], /^report: --since needs a value/],
    [['--status', 'boom'], /^report: --status: unknown status "boom"/],
    [['--model', ''], /^report: --model must not be empty/],
    [['--model', 'a', '--model', 'b'], /^report: --model given more than once/],
    [['--frobnicate'], /^report: unknown option `--frobnicate`/],
    [['extra'], /^report: unexpected argument `extra`/],
    [['--json=yes'], /^report: --json takes no value/],
    [['--html'], /^report: --html needs a value/],
    [['--html', 'a.html', '--json'], /^report: --html cannot be combined with --json/],
    [['--html', 'a.html', '--color'], /^report: --html cannot be combined with --color/],
  ])('usage error %j: message on err, exit 2', async (argv, message) => {
    const { code, out, err } = await run(argv);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });
});
