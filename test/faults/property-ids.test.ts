import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { BatchResult } from '../../src/app/call/run-batch.js';
import { readRuns, SERVER_ENTRY, useServer, type RunningServer } from '../e2e/harness.js';

/** Task ids that are members of Object.prototype: they pass validation and must be ordinary ids. */
const IDS = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'toLocaleString'] as const;

/** The detailed result: these tests read the whole record. */
async function call(server: RunningServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: { response_format: 'detailed', ...args } });
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { structured: result.structuredContent as Record<string, any>, isError: result.isError === true, text };
}

describe('task ids and model names that are Object.prototype member names, through every tool', () => {
  // A high threshold: this test is about the ledger, not the circuit.
  const server = useServer({
    OLLAMA_MCP_BREAKER_THRESHOLD: '100',
    FAKE_OLLAMA_MODELS: 'llama3.2:latest,tostring:latest',
    OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1',
  });

  it('ollama_run and ollama_run_many declare metadata.warnings in their output schema, empty on a healthy run', async () => {
    const { tools } = await server.client.listTools();
    const schemaOf = (name: string) => tools.find((tool) => tool.name === name)!.outputSchema as any;
    expect(schemaOf('ollama_run').properties.metadata.properties.warnings.type).toBe('array');
    expect(JSON.stringify(schemaOf('ollama_run_many'))).toContain('ledger_not_updated');
    expect((await server.run({ model: 'llama3.2', prompt: 'hello' })).metadata.warnings).toEqual([]);
  });

  it('ollama_task_status and ollama_reset know nothing of them before any run (no "Invalid time value")', async () => {
    for (const id of IDS) {
      const status = await call(server, 'ollama_task_status', { task_id: id });
      expect(status.text, id).not.toMatch(/Internal error/);
      expect(status.structured, id).toMatchObject({ task_id: id, known: false, attempts: 0, failures: 0 });
      const reset = await call(server, 'ollama_reset', { task_id: id });
      expect(reset.text, id).toBe(`Task "${id}" had no record; nothing to clear.`);
      expect(reset.structured.task_before, id).toMatchObject({ known: false });
    }
  });

  it('ollama_run counts their failures like any other id, and escalates at max_retries', async () => {
    for (const id of IDS) {
      const retryCounts: number[] = [];
      let last: Awaited<ReturnType<RunningServer['run']>> | undefined;
      for (let i = 0; i < 3; i += 1) {
        last = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: id, max_retries: 2 });
        retryCounts.push(last.metadata.retry_count);
      }
      expect(retryCounts, id).toEqual([0, 1, 2]);
      expect(last!.metadata.escalate, id).toBe(true);
      expect(last!.metadata.escalation_reason, id).toBe('max_retries_exceeded');
      const status = await call(server, 'ollama_task_status', { task_id: id });
      expect(status.structured, id).toMatchObject({ known: true, attempts: 3, failures: 3, escalated: true });
      const reset = await call(server, 'ollama_reset', { task_id: id });
      expect(reset.structured.task_before, id).toMatchObject({ known: true, failures: 3 });
      expect((await call(server, 'ollama_task_status', { task_id: id })).structured.known, id).toBe(false);
    }
  });

  it('ollama_run_many keeps each job of such ids apart', async () => {
    const result = await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        response_format: 'detailed',
        jobs: IDS.map((id) => ({ model: 'llama3.2', prompt: `job ${id} @fake:exit=1`, task_id: `${id}` })),
      },
    });
    const batch = result.structuredContent as unknown as BatchResult;
    expect(batch.results.map((r) => [r.metadata.task_id, r.metadata.retry_count])).toEqual(IDS.map((id) => [id, 0]));
    for (const id of IDS) {
      expect((await call(server, 'ollama_task_status', { task_id: id })).structured.failures, id).toBe(1);
    }
  });

  it('a model named like a prototype member gets its own circuit, and ollama_reset closes it', async () => {
    const run = await server.run({ model: 'toString', prompt: 'x @fake:exit=1' });
    expect(run.metadata.circuit.consecutive_failures).toBe(1);
    const health = await call(server, 'ollama_health', {});
    expect(health.structured.circuits).toContainEqual(
      expect.objectContaining({ model: 'tostring:latest', consecutive_failures: 1 }),
    );
    const reset = await call(server, 'ollama_reset', { model: 'toString' });
    expect(reset.isError).toBe(false);
    expect(reset.structured.circuit_before).toMatchObject({ model: 'toString', state: 'closed', consecutive_failures: 1 });
  });

  it('`__proto__` as a task id is refused as invalid input, nothing spawned, the server stays up', async () => {
    const run = await server.run({ model: 'llama3.2', prompt: 'x', task_id: '__proto__' });
    expect(run.metadata.status).toBe('invalid_input');
    const status = await call(server, 'ollama_task_status', { task_id: '__proto__' });
    expect(status.isError).toBe(true);
    expect(status.text).toMatch(/REJECTED/);
    expect((await call(server, 'ollama_task_status', { task_id: 'constructor' })).isError).toBe(false);
  });

  it('ollama_runs_summary and `report` filter and list them as ordinary tasks', async () => {
    const summary = await call(server, 'ollama_runs_summary', { since: 'all', task: 'constructor' });
    expect(summary.isError).toBe(false);
    expect(summary.structured.total_runs).toBe(4); // 3 runs + 1 batch job
    expect(summary.structured.escalated_tasks.map((t: { task_id: string }) => t.task_id)).toEqual(['constructor']);

    const { stdout, exitCode } = await execa(process.execPath, [SERVER_ENTRY, 'report', '--json', '--since', 'all'], {
      env: { OLLAMA_MCP_TELEMETRY_DIR: server.sandbox.telemetryDir },
      reject: false,
    });
    expect(exitCode).toBe(0);
    const report = JSON.parse(stdout) as { escalated_tasks: { task_id: string }[] };
    expect(report.escalated_tasks.map((t) => t.task_id).sort()).toEqual([...IDS].sort());
    expect(readRuns(server.sandbox).filter((r) => r.task_id === 'valueOf' && r.status === 'crashed')).toHaveLength(4);
  });
});
