import { describe, expect, it } from 'vitest';
import { readRuns, useServer, type RunningServer } from './harness.js';

/** The detailed result: these tests read the whole record. */
async function call(server: RunningServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: { response_format: 'detailed', ...args } });
  return {
    structured: result.structuredContent as Record<string, any>,
    isError: result.isError === true,
    text: JSON.stringify(result.content),
  };
}

describe('control tools: ollama_task_status and ollama_reset', () => {
  const server = useServer({
    OLLAMA_MCP_ESCALATION: 'block',
    OLLAMA_MCP_BREAKER_THRESHOLD: '2',
    OLLAMA_MCP_BREAKER_COOLDOWN_MS: '600000',
  });

  it("shows a task's ledger", async () => {
    await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'job-1', max_retries: 1 });
    await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'job-1', max_retries: 1 });
    const status = await call(server, 'ollama_task_status', { task_id: 'job-1' });
    expect(status.isError).toBe(false);
    expect(status.structured).toMatchObject({
      task_id: 'job-1',
      known: true,
      attempts: 2,
      failures: 2,
      total_failures: 2,
      last_status: 'crashed',
      last_model: 'llama3.2',
      escalated: true,
      escalation_reason: 'max_retries_exceeded',
      blocked: true,
    });
    expect((await call(server, 'ollama_task_status', { task_id: 'never-seen' })).structured).toMatchObject({
      known: false,
      failures: 0,
    });
  });

  it('resetting a task clears its count and lifts the block', async () => {
    expect((await server.run({ model: 'qwen2.5-coder:7b', prompt: 'x', task_id: 'job-1' })).metadata.status).toBe('blocked');
    const reset = await call(server, 'ollama_reset', { task_id: 'job-1' });
    expect(reset.structured).toMatchObject({ done: true, cleared: 'task', task_before: { failures: 2, escalated: true } });
    const again = await server.run({ model: 'qwen2.5-coder:7b', prompt: 'x', task_id: 'job-1' });
    expect(again.metadata).toMatchObject({ status: 'ok', retry_count: 0 });
  });

  it('resetting a model closes its circuit', async () => {
    // The two failures above opened llama3.2's circuit (threshold 2).
    expect((await server.run({ model: 'llama3.2', prompt: 'x' })).metadata.status).toBe('circuit_open');
    const reset = await call(server, 'ollama_reset', { model: 'llama3.2' });
    expect(reset.structured).toMatchObject({
      done: true,
      cleared: 'circuit',
      circuit_before: { model: 'llama3.2', state: 'open' },
    });
    expect((await server.run({ model: 'llama3.2', prompt: 'x' })).metadata.status).toBe('ok');
  });

  it('each control call is logged', async () => {
    const control = readRuns(server.sandbox).filter((r) => r.kind === 'control');
    expect(control.map((r) => [r.tool, r.action])).toEqual([
      ['ollama_task_status', 'status'],
      ['ollama_task_status', 'status'],
      ['ollama_reset', 'reset_task'],
      ['ollama_reset', 'reset_circuit'],
    ]);
  });

  it('needs exactly one of task_id and model', async () => {
    for (const args of [{}, { task_id: 'a', model: 'llama3.2' }]) {
      const result = await call(server, 'ollama_reset', args);
      expect(result.isError).toBe(true);
      expect(result.text).toContain('exactly one of `task_id` or `model`');
    }
  });
});
