// An attempt cut off by a crash of its server (SIGKILL, the out-of-memory killer) is not lost: the
// next server on the same telemetry dir settles it as `interrupted`, counted for its task, with its
// runs.jsonl line, so the ledger and the log agree after any crash.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  makeSandbox,
  readRuns,
  readRunTrace,
  SERVER_ENTRY,
  serverEnv,
  startTestServer,
  waitFor,
  type Sandbox,
} from './harness.js';

/** A raw stdio server that starts one hanging ollama_run for `taskId`, then is killed with SIGKILL. */
async function crashDuringRun(sandbox: Sandbox, taskId: string): Promise<void> {
  const child = spawn(process.execPath, [SERVER_ENTRY], { env: serverEnv(sandbox), stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: `forever ${taskId} @fake:hang`, task_id: taskId } },
  });
  const prompts = () => readRunTrace(sandbox).filter((e) => e.event === 'prompt' && e.prompt?.includes(taskId)).length;
  const before = prompts();
  await waitFor(() => prompts() > before, 10_000, 'the model process to read its prompt');
  child.kill('SIGKILL');
  await exited;
}

const openAttempts = (sandbox: Sandbox) => {
  const dir = path.join(sandbox.telemetryDir, 'attempts');
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe.skipIf(process.platform === 'win32')('attempts cut off by a crash of their server', () => {
  it('are settled by the next server as interrupted: logged once, counted for the task, not the model', async () => {
    const sandbox = makeSandbox();
    await crashDuringRun(sandbox, 'crashy');
    expect(readRuns(sandbox)).toEqual([]); // the dead server wrote no line
    expect(openAttempts(sandbox)).toHaveLength(1);

    const next = await startTestServer({}, sandbox);
    // Settling ends with the runs.jsonl line, then the stderr line, then the journal entry's removal:
    // wait for the last two as well, each is written after the line that ends the wait above it.
    const logged = /attempt [0-9a-f-]+ \(llama3\.2, task crashy\) settled as interrupted/;
    await waitFor(() => readRuns(sandbox).length === 1, 10_000, 'the interrupted attempt to be settled');
    await waitFor(() => logged.test(next.stderr()), 10_000, 'the settling to be said on stderr');
    await waitFor(() => openAttempts(sandbox).length === 0, 10_000, 'the journal entry to be removed');
    expect(readRuns(sandbox)[0]).toMatchObject({
      status: 'interrupted',
      task_id: 'crashy',
      model: 'llama3.2',
      escalate: false,
      retry_count: 0,
      circuit: { consecutive_failures: 0 },
    });
    expect(readRuns(sandbox)[0]!.error).toContain('stopped before the attempt ended');
    expect(readRuns(sandbox)).toHaveLength(1); // logged once
    // The task counted it: its next attempt is its second.
    const retry = await next.run({ model: 'llama3.2', prompt: 'fine now', task_id: 'crashy' });
    expect(retry.metadata).toMatchObject({ status: 'ok', retry_count: 1 });
  });

  it('a task that kills its server every time still ends in max_retries_exceeded', async () => {
    const sandbox = makeSandbox();
    for (let crash = 0; crash < 2; crash += 1) await crashDuringRun(sandbox, 'loop');
    const next = await startTestServer({}, sandbox);
    await waitFor(() => readRuns(sandbox).length === 2, 10_000, 'both interrupted attempts to be settled');
    const result = await next.run({ model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'loop', max_retries: 2 });
    expect(result.metadata).toMatchObject({
      status: 'crashed',
      retry_count: 2,
      escalate: true,
      escalation_reason: 'max_retries_exceeded',
    });
  });
});
