import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';

import { DAY_FACTS, realisticDayLines, writeRealisticDay } from '../helpers/realistic-day.js';
import { tempDir } from '../helpers/temp-dir.js';
import { makeSandbox, ROOT, SERVER_ENTRY, startServer, startTestServer } from './harness.js';

/** Where the realistic day's reports are left for a human to read (git-ignored, overwritten by each run). */
const ARTIFACTS = path.join(ROOT, 'test-artifacts');

/** The sentence of a text report that begins with `start`, its wrapped lines joined again. */
function sentence(report: string, start: string): string | undefined {
  const lines = report.split('\n');
  const at = lines.findIndex((line) => line.startsWith(start));
  if (at < 0) return undefined;
  const continued = [];
  for (const line of lines.slice(at + 1)) {
    if (!line.startsWith('  ')) break; // the report indents a sentence's continuation lines
    continued.push(line.trim());
  }
  return [lines[at], ...continued].join(' ');
}

/**
 * The report's `Dirs:` sentence names `dirs`, in order, each whole or shortened in the middle (its
 * real start, `…`, its real end), no two alike, no line over `width`.
 */
function expectDirsNamed(report: string, dirs: readonly string[], width: number): string[] {
  expect(report.split('\n').filter((line) => line.length > width)).toEqual([]);
  const shown = sentence(report, 'Dirs:')!
    .replace(/^Dirs: /, '')
    .split(', ');
  expect(shown).toHaveLength(dirs.length);
  expect(new Set(shown).size).toBe(dirs.length);
  for (const [i, text] of shown.entries()) {
    const [head, tail] = text.split('…');
    if (tail === undefined) expect(text).toBe(dirs[i]);
    else expect(dirs[i]!.startsWith(head!) && dirs[i]!.endsWith(tail), `${text} for ${dirs[i]}`).toBe(true);
  }
  return shown;
}

describe('reviewing runs: report command and ollama_runs_summary', () => {
  it('summarises what the server logged, for the developer and for the agent', async () => {
    const server = await startTestServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '100', OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' });
    await server.run({ model: 'llama3.2', prompt: 'ok' });
    await server.run({ model: 'llama3.2', prompt: 'ok again' });
    await server.run({ model: 'llama3.2', prompt: 'slow @fake:sleep_ms=2000', timeout_ms: 300 });
    for (let i = 0; i < 2; i += 1)
      await server.run({ model: 'qwen2.5-coder:7b', prompt: 'broken @fake:exit=1', task_id: 'bad', max_retries: 1 });
    await server.client.callTool({ name: 'ollama_task_status', arguments: { task_id: 'bad' } }); // a control line, not a run

    const { stdout, exitCode } = await execa(process.execPath, [SERVER_ENTRY, 'report', '--json', '--since', 'all'], {
      env: { OLLAMA_MCP_TELEMETRY_DIR: server.sandbox.telemetryDir, PATH: process.env.PATH ?? '' },
    });
    expect(exitCode).toBe(0);
    const summary = JSON.parse(stdout);
    expect(summary.total_runs).toBe(5);
    const byModel = Object.fromEntries(summary.models.map((m: { model: string }) => [m.model, m]));
    expect(byModel['llama3.2:latest']).toMatchObject({ runs: 3, ok: 2, timeouts: 1 });
    expect(byModel['qwen2.5-coder:7b']).toMatchObject({ runs: 2, ok: 0, escalations: 1, failures: { crashed: 2 } });
    expect(summary.escalated_tasks).toEqual([
      expect.objectContaining({ task_id: 'bad', escalation_reason: 'max_retries_exceeded' }),
    ]);

    const tool = await server.client.callTool({ name: 'ollama_runs_summary', arguments: {} });
    const small = tool.structuredContent as { total_runs: number; models: { model: string }[] };
    expect(small.total_runs).toBe(5);
    expect(summary.attention.tasks.map((t: { task_id: string }) => t.task_id)).toEqual(['bad']);
    expect(summary.escalation_causes).toEqual([
      expect.objectContaining({ model: 'qwen2.5-coder:7b', reason: 'max_retries_exceeded', status: 'crashed', escalations: 1 }),
    ]);
    expect(JSON.stringify(tool.structuredContent).length).toBeLessThan(8_000);
  });
});

describe('report on what the server wrote: a fallback chain falling through', () => {
  it('counts the call once, its fallen-through line as retried by the server, and the chain by its first model', async () => {
    const sandbox = makeSandbox();
    const server = await startServer(sandbox, {
      FAKE_OLLAMA_MODELS: 'broken:1b,good:1b',
      FAKE_OLLAMA_BROKEN_MODELS: 'broken:1b',
    });
    try {
      const r = await server.run({ model: 'broken:1b', fallback_models: ['good:1b'], prompt: 'hi', task_id: 'c-1' });
      expect(r.isError).toBe(false);
    } finally {
      await server.close();
    }
    const { stdout } = await execa(process.execPath, [SERVER_ENTRY, 'report', '--json', '--since', 'all'], {
      env: { OLLAMA_MCP_TELEMETRY_DIR: sandbox.telemetryDir, PATH: process.env.PATH ?? '' },
    });
    const summary = JSON.parse(stdout);
    expect(summary.total_runs).toBe(1); // the caller saw one result
    expect(summary.chains).toMatchObject({
      calls: 1,
      fell_through: 1,
      rows: [{ first_model: 'broken:1b', calls: 1, fell_through: 1, to: [{ model: 'good:1b', calls: 1, ok: 1 }] }],
    });
    const broken = summary.models.find((m: { model: string }) => m.model === 'broken:1b');
    expect(broken).toMatchObject({ runs: 0, retried: { fell_through: 1, busy_retries: 0 }, lost_attempts: 1 });
    const good = summary.models.find((m: { model: string }) => m.model === 'good:1b');
    expect(good).toMatchObject({ runs: 1, ok: 1 });
    expect(good.tokens.runs).toBe(1); // the fake prints --verbose stats
  });
});

describe('report on a realistic day (test/helpers/realistic-day.ts), through the built CLI', () => {
  let dayDir = '';
  beforeAll(() => {
    dayDir = tempDir('report-day-');
    writeRealisticDay(path.join(dayDir, 'alice'));
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  const cli = (args: string[], env: Record<string, string> = {}) =>
    execa(process.execPath, [SERVER_ENTRY, 'report', '--since', 'all', ...args], {
      env: { PATH: process.env.PATH ?? '', OLLAMA_MCP_TELEMETRY_DIR: path.join(dayDir, 'none'), ...env },
      extendEnv: false,
      reject: false,
    });

  it('explains the day in 100 columns (80 with COLUMNS=80): attention first, three causes, tokens, chains', async () => {
    const text = await cli(['--dir', path.join(dayDir, 'alice')]);
    expect(text.exitCode).toBe(0);
    writeFileSync(path.join(ARTIFACTS, 'report-day.txt'), text.stdout);
    process.stdout.write(`text report of the realistic day: ${path.join(ARTIFACTS, 'report-day.txt')}\n`);
    const lines = text.stdout.split('\n');
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(100);
    const narrow = await cli(['--dir', path.join(dayDir, 'alice')], { COLUMNS: '80' });
    expect(Math.max(...narrow.stdout.split('\n').map((line) => line.length))).toBeLessThanOrEqual(80);

    const order = [
      'Needs attention now',
      'Escalations by cause',
      'Outcomes per model',
      'Latency of answers',
      'Tokens per model',
      'Fallback chains',
    ];
    const at = order.map((heading) => lines.findIndex((line) => line.startsWith(heading)));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(text.stdout).toContain(`Circuit open: ${DAY_FACTS.openCircuit}`);
    const causeRows = lines.filter((line) => /^\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\d\d:\d\d:\d\d - /.test(line));
    expect(causeRows.map((line) => line.trim().split(/\s+/).slice(0, 5))).toEqual(
      [DAY_FACTS.outage, DAY_FACTS.retries, DAY_FACTS.circuit].map((c) => [
        String(c.escalations),
        String(c.escalations),
        c.model,
        c.reason,
        c.status,
      ]),
    );
    expect(text.stdout).toMatch(/^qwen3:8b\s+12\s+5 \(41\.7%\)\s+llama3\.2:latest 5, 5 ok$/m);
    expect(text.stdout).toContain(`Busy retries by the server: ${DAY_FACTS.busyRetries}`);

    const json = JSON.parse((await cli(['--json', '--dir', path.join(dayDir, 'alice')])).stdout);
    const gemma = json.models.find((m: { model: string }) => m.model === 'gemma3:4b');
    expect(gemma.tokens.may_be_truncated).toBe(DAY_FACTS.truncated);
    expect(gemma.tokens.prompt_tokens_p95).toBe(8192);
    const deepseek = json.models.find((m: { model: string }) => m.model === 'deepseek-r1:14b');
    expect(deepseek.duration_ms.p95).toBeGreaterThan(118_000); // every spawned run: the 2-minute timeouts dominate (within 1%)
    expect(deepseek.ok_duration_ms.p95).toBeLessThan(120_000); // answers only
    expect(deepseek.lost_ms).toBeGreaterThan(40 * 120_000);
    const qwen = json.models.find((m: { model: string }) => m.model === 'qwen2.5-coder:7b');
    expect(qwen.retried.busy_retries).toBe(DAY_FACTS.busyRetries);
    expect(qwen.failures.server_busy).toBeUndefined(); // retried by the server: not a failure the caller saw
    const html = await cli(['--html', path.join(ARTIFACTS, 'report-day.html'), '--dir', path.join(dayDir, 'alice')]);
    expect(html.exitCode).toBe(0);
  });

  it('reads several telemetry dirs at once (--dir repeated) and says which', async () => {
    writeRealisticDay(path.join(dayDir, 'bob'), 10);
    const dirs = [path.join(dayDir, 'alice'), path.join(dayDir, 'bob')];
    const one = JSON.parse((await cli(['--json', '--dir', dirs[0]!])).stdout);
    const two = JSON.parse((await cli(['--json', '--dir', dirs[0]!, '--dir', dirs[1]!])).stdout);
    expect(two.dirs).toEqual(dirs);
    expect(two.files).toEqual(dirs.map((dir) => path.join(dir, 'runs.jsonl')));
    const bob = JSON.parse((await cli(['--json', '--dir', dirs[1]!])).stdout);
    expect(two.total_runs).toBe(one.total_runs + bob.total_runs);
    const text = await cli(['--dir', dirs[0]!, '--dir', dirs[1]!]);
    // Whole under a short TMPDIR, shortened under a long one (macOS's): apart either way.
    expectDirsNamed(text.stdout, dirs, 100);
    const missing = await cli(['--dir', dirs[0]!, '--dir', path.join(dayDir, 'alice', 'runs.jsonl')]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain(`could not read the run logs in ${path.join(dayDir, 'alice', 'runs.jsonl')}`);
  });

  it('two long dirs that differ only at their end are shortened in the middle and printed apart', async () => {
    // As deep as under a 100-character TMPDIR, whatever this machine's is.
    const deep = path.join(dayDir, 'long-'.repeat(20));
    const dirs = ['alice', 'bob'].map((name) => path.join(deep, name));
    for (const dir of dirs) writeRealisticDay(dir, 3);
    for (const columns of ['100', '60']) {
      const text = await cli(['--dir', dirs[0]!, '--dir', dirs[1]!], { COLUMNS: columns });
      expect(text.exitCode).toBe(0);
      const shown = expectDirsNamed(text.stdout, dirs, Number(columns));
      expect(shown[0]).toMatch(/^\/\S*…\S*\/alice$/);
      expect(shown[1]).toMatch(/^\/\S*…\S*\/bob$/);
    }
  });

  it('ollama_runs_summary gives the agent the same causes, attention items and tokens, in a few KB', async () => {
    const sandbox = makeSandbox();
    mkdirSync(sandbox.telemetryDir, { recursive: true });
    writeFileSync(path.join(sandbox.telemetryDir, 'runs.jsonl'), `${realisticDayLines().join('\n')}\n`);
    const server = await startTestServer({ OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' }, sandbox);
    const tool = await server.client.callTool({ name: 'ollama_runs_summary', arguments: { since: 'all' } });
    const s = tool.structuredContent as {
      escalation_causes: { model: string; escalations: number }[];
      attention: { circuits_open: { model: string }[]; tasks_total: number; tasks: unknown[] };
      models: { model: string; tokens: { may_be_truncated: number } }[];
      chains: { fell_through: number; busy_retries: number };
    };
    expect(s.escalation_causes.map((c) => c.escalations)).toEqual([14, 10, 8]);
    expect(s.attention.circuits_open.map((c) => c.model)).toEqual([DAY_FACTS.openCircuit]);
    expect(s.attention.tasks).toHaveLength(10);
    expect(s.models.find((m) => m.model === 'gemma3:4b')!.tokens.may_be_truncated).toBe(DAY_FACTS.truncated);
    expect(s.chains).toMatchObject({ fell_through: DAY_FACTS.chainFellThrough, busy_retries: DAY_FACTS.busyRetries });
    const bytes = Buffer.byteLength(JSON.stringify(tool.structuredContent));
    expect(bytes).toBeLessThan(10 * 1024);
    const text = (tool.content as { type: string; text: string }[])[0]!.text;
    expect(Buffer.byteLength(text)).toBeLessThan(8 * 1024);
  });
});
