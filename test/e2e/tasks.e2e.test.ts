// MCP Tasks (spec 2025-11-25) through the SDK's own client, the path VS Code and MCP Inspector v2 take:
// a tools/call with `task` is answered with the task at once, and the same job is then served by
// tasks/get, tasks/result, tasks/list and tasks/cancel, with status notifications.
import { describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, TaskStatusNotificationSchema, type Task } from '@modelcontextprotocol/sdk/types.js';
import { readRuns, readRunTrace, spawnCount, startTestServer, waitFor } from './harness.js';

const BUDGET = { OLLAMA_MCP_REPLY_WITHIN_MS: '1500' };

/** tools/call with `task`, as a client that supports tasks sends it: the task, as created. */
async function startTask(client: Client, name: string, args: Record<string, unknown>): Promise<Task> {
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
    task: { ttl: 600_000 },
  })) {
    if (message.type === 'taskCreated') return message.task;
    if (message.type === 'error') throw message.error;
    if (message.type === 'result') throw new Error('answered without a task');
  }
  throw new Error('the stream ended without a task');
}

describe('MCP Tasks', () => {
  it('are declared: the capability, and task support on the two tools that run models only', async () => {
    const server = await startTestServer();
    expect(server.client.getServerCapabilities()?.tasks).toMatchObject({
      requests: { tools: { call: {} } },
      list: {},
      cancel: {},
    });
    const { tools } = await server.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport ?? 'none']));
    expect(support).toMatchObject({
      ollama_run: 'optional',
      ollama_run_many: 'optional',
      ollama_wait: 'none',
      ollama_task_status: 'none',
    });
  });

  it('run a call end to end: created at once, working, then completed with the whole answer, counted once', async () => {
    const server = await startTestServer(BUDGET);
    const statuses: string[] = [];
    server.client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params.status));
    const answer = 'answered as a task';
    const messages: string[] = [];
    let result: Record<string, unknown> | undefined;
    for await (const message of server.client.experimental.tasks.callToolStream(
      {
        name: 'ollama_run',
        arguments: {
          model: 'llama3.2',
          prompt: `x @fake:sleep_ms=3000 @fake:answer=${encodeURIComponent(answer)}`,
          task_id: 'as-task',
        },
      },
      CallToolResultSchema,
      { task: { ttl: 600_000 }, timeout: 2_000 },
    )) {
      messages.push(message.type === 'taskStatus' ? `status:${message.task.status}` : message.type);
      if (message.type === 'result') result = message.result as Record<string, unknown>;
      if (message.type === 'error') throw message.error;
    }
    expect(messages[0]).toBe('taskCreated');
    expect(messages).toContain('status:working');
    expect(messages.at(-1)).toBe('result');
    expect(result).toMatchObject({
      isError: false,
      structuredContent: { ok: true, status: 'ok', escalate: false, output: answer },
      metadata: { status: 'ok', escalate: false, retry_count: 0 },
    });
    await waitFor(() => statuses.includes('completed'), 5_000, 'the completed status notification');
    expect(spawnCount(server.sandbox)).toBe(1);
    expect(
      readRuns(server.sandbox)
        .filter((l) => l.task_id === 'as-task')
        .map((l) => l.status),
    ).toEqual(['ok']);
  });

  it('a failed run is a failed task whose result escalates as the call would have', async () => {
    const server = await startTestServer(BUDGET);
    const task = await startTask(server.client, 'ollama_run', { model: 'gone:1b', prompt: 'x', task_id: 'task-esc' });
    const result = await server.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, structuredContent: { status: 'model_not_found', escalate: true } });
    expect((result.content[0] as { text: string }).text).toContain('ESCALATE');
    expect((await server.client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
  });

  it('are listed, and cancelled with tasks/cancel: the model is stopped and nothing is counted', async () => {
    const server = await startTestServer(BUDGET);
    const task = await startTask(server.client, 'ollama_run', {
      model: 'llama3.2',
      prompt: 'x @fake:hang',
      task_id: 'task-cancel',
    });
    await waitFor(() => spawnCount(server.sandbox) >= 1, 10_000, 'the model to start');
    expect((await server.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    expect((await server.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(task.taskId);

    const cancelled = await server.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    await waitFor(() => readRunTrace(server.sandbox).some((e) => e.event === 'exit'), 15_000, 'the model to be stopped');
    expect(readRunTrace(server.sandbox).find((e) => e.event === 'exit')).toMatchObject({ signal: 'SIGTERM' });
    await waitFor(() => readRuns(server.sandbox).some((l) => l.task_id === 'task-cancel'), 10_000, 'the cancelled run line');
    expect((await server.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    const status = await server.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'task-cancel', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ failures: 0, escalated: false });
  });

  it('are collected by a client that reconnected to another server on the same data dir', async () => {
    const first = await startTestServer(BUDGET);
    const task = await startTask(first.client, 'ollama_run', {
      model: 'llama3.2',
      prompt: 'x @fake:sleep_ms=2000',
      task_id: 'task-moved',
    });
    const second = await startTestServer(BUDGET, first.sandbox);
    expect((await second.client.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    const result = await second.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 10_000 });
    expect(result).toMatchObject({ isError: false, structuredContent: { status: 'ok' } });
    expect((await second.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('run a batch as one task whose result holds every job', async () => {
    const server = await startTestServer(BUDGET);
    const task = await startTask(server.client, 'ollama_run_many', {
      jobs: [
        { model: 'llama3.2', prompt: 'one' },
        { model: 'llama3.2', prompt: 'two @fake:sleep_ms=2000' },
      ],
    });
    const result = await server.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 10_000 });
    expect(result.structuredContent).toMatchObject({ summary: { total: 2, ok: 2 } });
    expect((result.structuredContent as { results: { status: string }[] }).results.map((r) => r.status)).toEqual(['ok', 'ok']);
  });

  it('refuse invalid arguments as an error of the request, and start nothing', async () => {
    const server = await startTestServer(BUDGET);
    await expect(startTask(server.client, 'ollama_run', { model: 'llama3.2' })).rejects.toThrow(/prompt/);
    await expect(startTask(server.client, 'ollama_task_status', { task_id: 'x' })).rejects.toThrow(/does not run as a task/);
    expect(spawnCount(server.sandbox)).toBe(0);
  });
});
