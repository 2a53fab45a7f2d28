import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, useServer } from './harness.js';

describe('retries and escalation per task_id', () => {
  // A high breaker threshold keeps the circuit out of this test.
  const server = useServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '100' });

  it('counts failures per task; with max_retries 3 the 4th failure escalates with max_retries_exceeded', async () => {
    const fail = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'task-A', max_retries: 3 };
    const seen = [];
    for (let i = 0; i < 4; i += 1) seen.push((await server.run(fail)).metadata);
    expect(seen.map((m) => m.retry_count)).toEqual([0, 1, 2, 3]);
    expect(seen.map((m) => m.escalate)).toEqual([false, false, false, true]);
    expect(seen.map((m) => m.retries_left)).toEqual([3, 2, 1, 0]);
    expect(seen[3]).toMatchObject({ escalation_reason: 'max_retries_exceeded', retryable: false });

    const last = await server.run(fail);
    expect(last.metadata).toMatchObject({ retry_count: 4, escalate: true, escalation_reason: 'max_retries_exceeded' });
    expect(last.text).toMatch(/ESCALATE: STOP RETRYING TASK "task-A"/);
    expect(last.text).toContain('NEXT: Stop: do not retry this task; escalate it to a human or a stronger model');
  });

  it('other tasks keep their own count', async () => {
    const other = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'task-B', max_retries: 3 });
    expect(other.metadata).toMatchObject({ retry_count: 0, escalate: false });
  });

  it('a success clears the streak', async () => {
    const ok = await server.run({ model: 'llama3.2', prompt: 'fine now', task_id: 'task-A', max_retries: 3 });
    expect(ok.metadata).toMatchObject({ status: 'ok', retry_count: 5, escalate: false });
    const next = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'task-A', max_retries: 3 });
    expect(next.metadata).toMatchObject({ retry_count: 0, escalate: false });
  });

  it("max_retries 0 never escalates for count; the caller's larger retry_count wins", async () => {
    const unlimited = { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'task-C', max_retries: 0 };
    for (let i = 0; i < 3; i += 1) expect((await server.run(unlimited)).metadata.escalate).toBe(false);
    const told = await server.run({
      model: 'llama3.2',
      prompt: 'broken @fake:exit=1',
      task_id: 'task-D',
      retry_count: 5,
      max_retries: 3,
    });
    expect(told.metadata).toMatchObject({ retry_count: 5, escalate: true, escalation_reason: 'max_retries_exceeded' });
  });

  it('without task_id only the caller retry_count counts (stateless)', async () => {
    const first = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', max_retries: 2 });
    const second = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', max_retries: 2 });
    expect([first.metadata.retry_count, second.metadata.retry_count]).toEqual([0, 0]);
    const third = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', max_retries: 2, retry_count: 2 });
    expect(third.metadata).toMatchObject({ escalate: true, escalation_reason: 'max_retries_exceeded' });
  });

  it('the count survives a restart of the server', async () => {
    await server.restart();
    const spawnsBefore = spawnCount(server.sandbox);
    const resumed = await server.run({ model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'task-B', max_retries: 3 });
    expect(resumed.metadata.retry_count).toBe(1);
    expect(spawnCount(server.sandbox)).toBe(spawnsBefore + 1);
    const runs = readRuns(server.sandbox).filter((r) => r.task_id === 'task-B');
    expect(runs.map((r) => r.retry_count)).toEqual([0, 1]);
  });
});
