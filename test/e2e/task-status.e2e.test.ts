// ollama_task_status reads a task's record, and also the attempts of it under way: an agent that
// asks right after starting (or cancelling) a run must not be told the task is unknown.
import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, startTestServer, waitFor, type RunningServer } from './harness.js';

async function taskStatus(server: RunningServer, taskId: string) {
  const result = await server.client.callTool({ name: 'ollama_task_status', arguments: { task_id: taskId } });
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { ...(result.structuredContent as { known: boolean; next?: string; in_flight?: number }), text };
}

describe('ollama_task_status and attempts in flight', () => {
  it('sees a running attempt, on this server and on another one on the same data dir, and right after a cancel', async () => {
    const first = await startTestServer();
    const second = await startTestServer({}, first.sandbox);
    const controller = new AbortController();
    const running = first
      .run({ model: 'llama3.2', prompt: 'x @fake:hang', task_id: 'fresh' }, { signal: controller.signal })
      .catch(() => null);
    await waitFor(() => spawnCount(first.sandbox) >= 1, 10_000, 'the run to start');

    const here = await taskStatus(first, 'fresh');
    expect(here).toMatchObject({ known: true, in_flight: 1, escalated: false });
    expect(here.next).toContain('1 attempt(s) of this task are under way');
    expect(here.text).toContain('under way now');
    expect(await taskStatus(second, 'fresh')).toMatchObject({ known: true, in_flight: 1 });

    controller.abort();
    const justAfter = await taskStatus(first, 'fresh');
    expect(justAfter.known).toBe(true);
    await running;
    await waitFor(() => readRuns(first.sandbox).some((l) => l.task_id === 'fresh'), 10_000, 'the cancelled line');
  });
});
