import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { registerTools } from '../../../src/mcp/tool-registry.js';
import { compactRunsSummarySchema, type CompactRunsSummary } from '../../../src/report/summary-schema.js';
import { ollamaRunsSummaryTool } from '../../../src/tools/ollama-runs-summary.js';
import { BASIC_DIR, manyEscalatedTasks, NOW, record, writeLog } from '../../helpers/run-log-fixtures.js';
import { tempDir } from '../../helpers/temp-dir.js';

interface Called {
  readonly isError: boolean;
  readonly structured: CompactRunsSummary;
  readonly text: string;
}

let tmp: string;
let client: Client;
let server: Server;

/** The tool behind a real SDK client (which checks structuredContent against the outputSchema). */
async function connect(telemetryDir: string): Promise<void> {
  server = new Server({ name: 'test', version: '0.0.0' }, { capabilities: { tools: {} } });
  registerTools(server, [ollamaRunsSummaryTool({ telemetryDir, now: () => NOW })]);
  client = new Client({ name: 'test-client', version: '0.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  await client.listTools(); // the client validates results against the schemas listed here
}

/** The detailed summary (the tests below read its every field). */
async function call(args: Record<string, unknown>): Promise<Called> {
  const result = await client.callTool({ name: 'ollama_runs_summary', arguments: { response_format: 'detailed', ...args } });
  const content = result.content as { type: string; text: string }[];
  return {
    isError: result.isError === true,
    structured: compactRunsSummarySchema.parse(result.structuredContent),
    text: content[0]!.text,
  };
}

beforeEach(async () => {
  tmp = tempDir('report-tool-');
});
afterEach(async () => {
  await client?.close();
  await server?.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('ollama_runs_summary', () => {
  it('is listed as read-only, with a strict input schema', async () => {
    await connect(BASIC_DIR);
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'ollama_runs_summary')!;
    expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tool.inputSchema).toMatchObject({ additionalProperties: false });
    expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual([
      'model',
      'response_format',
      'since',
      'status',
      'task',
      'top',
    ]);
    expect(tool.outputSchema).toBeDefined();
  });

  it('covers the last 24 hours by default; "all" reads the whole log', async () => {
    await writeLog(tmp, 'runs.jsonl', [
      record({ ts: '2025-11-20T10:00:00.000Z', model: 'old:1b' }), // more than 24 h before NOW
      record({ ts: '2025-11-22T11:00:00.000Z', model: 'new:1b' }),
    ]);
    await connect(tmp);
    const recent = await call({});
    expect(recent.isError).toBe(false);
    expect(recent.structured.filters.since).toBe('2025-11-21T12:00:00.000Z');
    expect(recent.structured.models.map((m) => m.model)).toEqual(['new:1b']);
    const all = await call({ since: 'all' });
    expect(all.structured.total_runs).toBe(2);
    expect(all.structured.filters.since).toBeNull();
  });

  it('returns the summary without timeline, and its text rendering', async () => {
    await connect(BASIC_DIR);
    const { isError, structured, text } = await call({ since: '7d' });
    expect(isError).toBe(false);
    expect(structured).not.toHaveProperty('timeline');
    expect(structured).toMatchObject({ total_runs: 13, models_omitted: 0, escalated_tasks_omitted: 0, error: null }); // 13: the record without ts is out of any window
    expect(structured.escalated_tasks.map((t) => t.task_id)).toEqual(['t-beta', 't-delta']);
    expect(text).toContain('Runs: 13, ok 6 (46.2%), escalations 3');
    expect(text).toContain('t-beta');
  });

  it('concise by default: the figures and what needs attention, without the bookkeeping or what is empty', async () => {
    await connect(BASIC_DIR);
    const result = await client.callTool({ name: 'ollama_runs_summary', arguments: { since: 'all' } });
    const concise = result.structuredContent as Record<string, unknown>;
    const detailed = (await call({ since: 'all' })).structured;
    expect(concise).toMatchObject({ total_runs: detailed.total_runs, total_escalations: detailed.total_escalations });
    expect(concise.escalation_causes).toEqual(detailed.escalation_causes);
    for (const key of ['schema', 'generated_at', 'filters', 'range', 'files', 'dirs', 'skipped_lines', 'error']) {
      expect(concise, key).not.toHaveProperty(key);
    }
    expect(JSON.stringify(concise).length).toBeLessThan(JSON.stringify(detailed).length);
  });

  it('applies model, task and status filters', async () => {
    await connect(BASIC_DIR);
    expect((await call({ since: 'all', model: 'llama3.2' })).structured.total_runs).toBe(4);
    expect((await call({ since: 'all', task: 't-beta' })).structured.total_runs).toBe(5);
    expect((await call({ since: 'all', status: 'timeout' })).structured.total_runs).toBe(3);
    expect((await call({ since: 'all', status: ['ok', 'crashed'] })).structured.total_runs).toBe(8);
  });

  it('stays small: 500 escalated tasks with long errors (3 causes, 500 unresolved) fit in 12 KB of JSON', async () => {
    await writeLog(tmp, 'runs.jsonl', manyEscalatedTasks());
    await connect(tmp);
    const { structured, text } = await call({ since: 'all' });
    expect(structured.total_runs).toBe(2000);
    expect(structured.escalated_tasks).toHaveLength(10);
    expect(structured.escalated_tasks_omitted).toBe(490);
    expect(structured.escalated_tasks[0]!.task_id).toBe('task-with-a-longish-identifier-0499'); // most recent first
    expect(structured.escalated_tasks[0]!.last_error!.length).toBeLessThanOrEqual(200);
    expect(Buffer.byteLength(JSON.stringify(structured))).toBeLessThan(12 * 1024);
    expect(Buffer.byteLength(text)).toBeLessThan(8 * 1024);
    expect(structured.attention.tasks).toHaveLength(10);
    expect(structured.attention.tasks_total).toBe(500);
    expect(structured.escalation_causes.map((c) => [c.model, c.escalations])).toEqual(
      [
        ['deepseek-r1:14b', 166],
        ['llama3.2:latest', 167],
        ['qwen3:8b', 167],
      ].sort((a, b) => (b[1] as number) - (a[1] as number)),
    );
    expect(text).toContain('490 more escalated task(s) not shown');
    const top50 = await call({ since: 'all', top: 50 });
    expect(top50.structured.escalated_tasks).toHaveLength(50);
  });

  it('lists at most `top` models, most runs first', async () => {
    await writeLog(
      tmp,
      'runs.jsonl',
      ['a:1', 'b:1', 'b:1', 'c:1', 'c:1', 'c:1'].map((model) => record({ ts: '2025-11-22T11:00:00.000Z', model })),
    );
    await connect(tmp);
    const { structured, text } = await call({ top: 2 });
    expect(structured.models.map((m) => m.model)).toEqual(['c:1', 'b:1']);
    expect(structured.models_omitted).toBe(1);
    expect(text).toContain('1 more model(s) with fewer runs not shown.');
  });

  it.each([
    [{ top: 0 }, /`top`: must be at least 1/],
    [{ top: 51 }, /`top`: must be at most 50/],
    [{ top: 2.5 }, /`top`: must be a whole number/],
    [{ since: 'yesterday' }, /`since`: expected a duration .*offset is given\), got "yesterday"\.$/],
    [{ since: '2025-02-30' }, /`since`: "2025-02-30" is not a real date/],
    [{ status: 'boom' }, /`status`: must be a run status/],
    [{ model: '' }, /`model`: must not be empty/],
    [{ verbose: true }, /unknown argument `verbose`/],
  ])('refuses %j with a clear message, in the same result shape', async (args, message) => {
    await connect(BASIC_DIR);
    const { isError, structured, text } = await call(args);
    expect(isError).toBe(true);
    expect(structured.error).toMatch(message);
    expect(structured.total_runs).toBe(0);
    expect(text).toMatch(message);
  });

  it('reports an unreadable log as an error result', async () => {
    const file = join(tmp, 'not-a-dir');
    await writeFile(file, '');
    await connect(file);
    const { isError, structured } = await call({});
    expect(isError).toBe(true);
    expect(structured.error).toMatch(/could not read the run log in .*not-a-dir/);
  });
});
