// Work that outlasts the client: a run answers within the reply budget, goes on as a job past it, and
// is collected whole with ollama_wait, from this server or another on the same data dir, also after
// the server that ran it exited or died. Scaled down: a 5 s run under a client that gives up at 3 s.
import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { crashWhileRunning } from '../helpers/crashing-server.js';
import {
  makeSandbox,
  readRuns,
  readRunTrace,
  spawnCount,
  startTestServer,
  useHttpServer,
  waitFor,
  type RunningServer,
} from './harness.js';

interface Reply {
  readonly ok?: boolean;
  readonly status?: string;
  readonly escalate: boolean;
  readonly escalation_reason?: string;
  readonly job_id?: string;
  readonly done?: boolean;
  readonly next?: string;
  readonly output?: string;
  readonly progress?: string;
  readonly summary?: Record<string, number | boolean>;
  readonly results?: Reply[];
}

interface Called {
  readonly reply: Reply;
  readonly text: string;
  readonly isError: boolean;
  readonly metadata: Record<string, unknown> | undefined;
}

/** A tools/call as a client whose own limit is `timeoutMs` (no progress extends it). */
async function call(client: Client, name: string, args: Record<string, unknown>, timeoutMs = 3_000): Promise<Called> {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs });
  return {
    reply: result.structuredContent as unknown as Reply,
    text: (result.content as { text: string }[]).map((c) => c.text).join('\n'),
    isError: result.isError === true,
    metadata: result.metadata as Record<string, unknown> | undefined,
  };
}

/** Collect a job until it is done, as an agent would (each wait within the client's limit). */
async function collect(server: RunningServer, jobId: string, rounds = 20): Promise<Called> {
  for (let i = 0; i < rounds; i += 1) {
    const waited = await call(server.client, 'ollama_wait', { job_id: jobId }, 3_000);
    if (waited.reply.done !== false) return waited;
  }
  throw new Error(`job ${jobId} did not end`);
}

const BUDGET = { OLLAMA_MCP_REPLY_WITHIN_MS: '1500' };

describe('a run that outlasts the client', () => {
  it('is answered with a job before the client gives up, then collected whole: started once, never killed, counted once', async () => {
    const server = await startTestServer(BUDGET);
    const answer = 'the whole answer, at last';
    const started = await call(server.client, 'ollama_run', {
      model: 'llama3.2',
      prompt: `long work @fake:sleep_ms=5000 @fake:answer=${encodeURIComponent(answer)}`,
      task_id: 'long-1',
    });
    // Both views say what to do: nothing failed, nothing escalated, collect it.
    expect(started.isError).toBe(false);
    expect(started.reply).toMatchObject({ ok: false, status: 'running', escalate: false, job_id: expect.any(String) });
    const jobId = started.reply.job_id!;
    expect(started.reply.next).toContain(`ollama_wait {"job_id": "${jobId}"}`);
    expect(started.text).toMatch(/^RUNNING: /);
    expect(started.text).toContain(`NEXT: Still running: collect the result with ollama_wait {"job_id": "${jobId}"}`);
    expect(started.metadata).toMatchObject({ status: 'running', escalate: false, job_id: jobId });

    const collected = await collect(server, jobId);
    expect(collected.reply).toMatchObject({ ok: true, status: 'ok', escalate: false, done: true, job_id: jobId, output: answer });
    expect(collected.metadata).toMatchObject({
      status: 'ok',
      escalate: false,
      timed_out: false,
      retry_count: 0,
      escalation_reason: null,
    });
    // Collected again: the same result (it stays for an hour).
    expect((await call(server.client, 'ollama_wait', { job_id: jobId })).reply).toMatchObject({ status: 'ok', output: answer });

    const runs = readRunTrace(server.sandbox).filter((e) => e.event === 'start');
    expect(runs).toHaveLength(1);
    expect(readRunTrace(server.sandbox).find((e) => e.event === 'exit')).toMatchObject({ code: 0, signal: null });
    expect(
      readRuns(server.sandbox)
        .filter((l) => l.task_id === 'long-1')
        .map((l) => l.status),
    ).toEqual(['ok']);
    const status = await server.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'long-1', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ attempts: 1, failures: 0 });
  });

  it('a run that ends in time answers exactly as before, with the specification metadata beside it', async () => {
    const server = await startTestServer(BUDGET);
    const ok = await call(server.client, 'ollama_run', { model: 'llama3.2', prompt: 'quick', task_id: 'quick' });
    expect(ok.reply).toMatchObject({ ok: true, status: 'ok', escalate: false });
    expect(ok.reply.job_id).toBeUndefined();
    expect(ok.metadata).toEqual({
      status: 'ok',
      timed_out: false,
      duration_ms: expect.any(Number),
      retry_count: 0,
      escalate: false,
      escalation_reason: null,
    });

    const failed = await call(server.client, 'ollama_run', { model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'spec-fail' });
    expect(failed.metadata).toMatchObject({ status: 'crashed', escalate: false, retry_count: 0 });
    const escalated = await call(server.client, 'ollama_run', { model: 'gone:1b', prompt: 'x', task_id: 'spec-esc' });
    expect(escalated.metadata).toMatchObject({ status: 'model_not_found', escalate: true, escalation_reason: 'model_not_found' });
    expect(escalated.text).toContain('ESCALATE');
  });

  it('reply_within_ms 0 hands a job back at once; a failure collected later escalates as the run would have', async () => {
    const server = await startTestServer();
    const started = await call(server.client, 'ollama_run', {
      model: 'gone:1b',
      prompt: 'x',
      task_id: 'later',
      reply_within_ms: 0,
    });
    expect(started.reply).toMatchObject({ status: 'running', escalate: false });
    const collected = await collect(server, started.reply.job_id!);
    expect(collected.reply).toMatchObject({
      status: 'model_not_found',
      escalate: true,
      escalation_reason: 'model_not_found',
      done: true,
    });
    expect(collected.isError).toBe(true);
    expect(collected.text).toContain('ESCALATE: STOP RETRYING TASK "later"');
  });

  it('is collected from a second server on the same data dir, while it runs and after its server exited', async () => {
    const first = await startTestServer(BUDGET);
    const second = await startTestServer(BUDGET, first.sandbox);
    const started = await call(first.client, 'ollama_run', {
      model: 'llama3.2',
      prompt: 'elsewhere @fake:sleep_ms=4000',
      task_id: 'two',
    });
    const jobId = started.reply.job_id!;
    const meanwhile = await call(second.client, 'ollama_wait', { job_id: jobId, wait_ms: 0 });
    expect(meanwhile.reply).toMatchObject({ status: 'running', done: false, escalate: false });
    expect(meanwhile.reply.progress).toMatch(/running on server pid \d+/);
    expect((await collect(second, jobId)).reply).toMatchObject({ status: 'ok', done: true });
    await first.close();
    const third = await startTestServer(BUDGET, first.sandbox);
    expect((await call(third.client, 'ollama_wait', { job_id: jobId })).reply).toMatchObject({ status: 'ok', done: true });
  });

  it('a job whose server was SIGKILLed while it ran is settled as interrupted, and collected so', async () => {
    const sandbox = makeSandbox();
    // The dead server's run was handed over at once (reply_within_ms 0 is its default here).
    await crashWhileRunning(sandbox, 'killed-job', { OLLAMA_MCP_REPLY_WITHIN_MS: '0' });
    expect(readRuns(sandbox)).toEqual([]);
    const next = await startTestServer({}, sandbox);
    const [jobId] = await listJobIds(sandbox.telemetryDir);
    const collected = await call(next.client, 'ollama_wait', { job_id: jobId! });
    expect(collected.reply).toMatchObject({ status: 'interrupted', done: true, escalate: false });
    expect(readRuns(sandbox).map((l) => l.status)).toEqual(['interrupted']);
  });

  it('ollama_wait cancel stops the model, and nothing is counted', async () => {
    const server = await startTestServer(BUDGET);
    const started = await call(server.client, 'ollama_run', {
      model: 'llama3.2',
      prompt: 'x @fake:hang',
      task_id: 'cancel-me',
      reply_within_ms: 0,
    });
    await waitFor(() => spawnCount(server.sandbox) >= 1, 10_000, 'the model to start');
    const cancelled = await call(server.client, 'ollama_wait', { job_id: started.reply.job_id!, cancel: true }, 15_000);
    expect(cancelled.reply).toMatchObject({ status: 'cancelled', done: true, escalate: false });
    expect(readRunTrace(server.sandbox).find((e) => e.event === 'exit')).toMatchObject({ signal: 'SIGTERM' });
    const status = await server.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'cancel-me', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ failures: 0, escalated: false });
  });

  it('an unknown job id is said so, in both views', async () => {
    const server = await startTestServer();
    const unknown = await call(server.client, 'ollama_wait', { job_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.isError).toBe(true);
    expect(unknown.reply).toMatchObject({ done: false, escalate: false });
    expect(unknown.text).toMatch(/^UNKNOWN JOB: /);
  });
});

describe('a batch that outlasts the client', () => {
  it('return_when 2 ends once two jobs are ok: the slow one is cancelled and not counted', async () => {
    const server = await startTestServer(BUDGET);
    const batch = await call(server.client, 'ollama_run_many', {
      jobs: [
        { model: 'llama3.2', prompt: 'slow @fake:sleep_ms=20000', task_id: 'race-slow' },
        { model: 'llama3.2', prompt: 'fast one', task_id: 'race-a' },
        { model: 'llama3.2', prompt: 'fast two', task_id: 'race-b' },
      ],
      concurrency: 3,
      return_when: 2,
    });
    expect(batch.reply.results?.map((r) => r.status)).toEqual(['cancelled', 'ok', 'ok']);
    const status = await server.client.callTool({
      name: 'ollama_task_status',
      arguments: { task_id: 'race-slow', response_format: 'detailed' },
    });
    expect(status.structuredContent).toMatchObject({ failures: 0 });
  });

  it('goes on as a job past the budget; ollama_wait returns each job as it ends, then all', async () => {
    const server = await startTestServer(BUDGET);
    const started = await call(server.client, 'ollama_run_many', {
      jobs: [
        { model: 'llama3.2', prompt: 'quick' },
        { model: 'llama3.2', prompt: 'slow @fake:sleep_ms=5000' },
      ],
      concurrency: 2,
    });
    expect(started.isError).toBe(false);
    expect(started.reply).toMatchObject({ job_id: expect.any(String), summary: { total: 2, running: 1, ok: 1 } });
    expect(started.reply.results?.map((r) => r.status)).toEqual(['ok', 'running']);
    expect(started.text).toMatch(/^RUNNING: the batch goes on as job /);
    const collected = await collect(server, started.reply.job_id!);
    expect(collected.reply).toMatchObject({ done: true, escalate: false, summary: { total: 2, ok: 2 } });
    expect(collected.reply.results?.map((r) => r.status)).toEqual(['ok', 'ok']);
  });
});

async function listJobIds(telemetryDir: string): Promise<string[]> {
  const names = await readdir(`${telemetryDir}/jobs`).catch(() => [] as string[]);
  return names.filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -5));
}

describe('a job started over HTTP', () => {
  const server = useHttpServer();
  const connect = async () => {
    const client = new Client({ name: 'jobs-http-e2e', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } }));
    return client;
  };

  it("is the token's: a new session collects it after the first one closed; a stdio client of the data dir does not", async () => {
    const first = await connect();
    const started = await call(first, 'ollama_run', { model: 'llama3.2', prompt: 'x @fake:sleep_ms=1500', reply_within_ms: 0 });
    const jobId = started.reply.job_id!;
    await first.close();

    const stdio = await startTestServer({}, server.sandbox);
    const stranger = await call(stdio.client, 'ollama_wait', { job_id: jobId });
    expect(stranger.text).toMatch(/^UNKNOWN JOB: /);
    await stdio.close();

    const second = await connect();
    const collected = await call(second, 'ollama_wait', { job_id: jobId, wait_ms: 2_500 });
    expect(collected.reply).toMatchObject({ status: 'ok', done: true, escalate: false });
    await second.close();
  });
});
