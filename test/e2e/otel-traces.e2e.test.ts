import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, SERVER_ENTRY, serverEnv, startServer } from './harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { removeTempDir } from '../helpers/temp-dir.js';

// Traces as a collector receives them (OTLP/HTTP, JSON): a tools/call SERVER span per call, child of
// the caller's `_meta.traceparent`, with a CLIENT span per attempt under it.

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const SERVER_KIND = 2;
const CLIENT_KIND = 3;
const INTERNAL_KIND = 1;

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  let spans: ReceivedSpan[];
  let stderr = '';

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const sandbox = makeSandbox();
    const server = await startServer(sandbox, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'floor-delegate',
      OLLAMA_HOST: 'http://gpu-box:11500',
    });
    const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
    // One task fails three times and escalates (max_retries 2).
    for (let i = 0; i < 3; i += 1) {
      await server.client.callTool({
        name: 'ollama_run',
        arguments: { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'esc-task', max_retries: 2 },
        _meta: { traceparent, tracestate: 'caller=1' },
      });
    }
    // A success with tokens, and a batch of two jobs, without a caller's trace.
    await server.run({ model: 'qwen2.5-coder:7b', prompt: 'say hi', task_id: 'fine-task' });
    await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        jobs: [
          { model: 'llama3.2', prompt: 'one' },
          { model: 'llama3.2', prompt: 'two' },
        ],
      },
    });
    // Closing stdin ends the server, which exports the spans it holds.
    await server.close();
    stderr = server.stderr();
    spans = receiver.spans;
    removeTempDir(sandbox.root);
  }, 60_000);

  afterAll(() => receiver.close());

  const serverSpans = () => spans.filter((s) => s.kind === SERVER_KIND);
  const childrenOf = (span: ReceivedSpan) => spans.filter((s) => s.parentSpanId === span.spanId);

  it('each tools/call is a SERVER span under the caller span its _meta.traceparent names', () => {
    const escalatedTask = serverSpans().filter((s) => s.traceId === CALLER_TRACE);
    expect(escalatedTask).toHaveLength(3);
    for (const span of escalatedTask) {
      expect(span.name).toBe('tools/call ollama_run');
      expect(span.parentSpanId).toBe(CALLER_SPAN);
      expect(span.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'ollama_run',
        'network.transport': 'pipe',
        'error.type': 'tool_error',
      });
      expect(typeof span.attributes['jsonrpc.request.id']).toBe('string');
      expect(span.attributes['mcp.protocol.version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(span.resource['service.name']).toBe('floor-delegate');
    }
  });

  it('each attempt is a CLIENT span under its call, with model, provider, host, status and task', () => {
    const calls = serverSpans().filter((s) => s.traceId === CALLER_TRACE);
    expect(calls).toHaveLength(3);
    for (const call of calls) {
      const [attempt, ...more] = childrenOf(call);
      expect(more).toHaveLength(0);
      expect(attempt).toMatchObject({ name: 'chat llama3.2', kind: CLIENT_KIND });
      expect(attempt!.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'ollama',
        'gen_ai.request.model': 'llama3.2',
        'server.address': 'gpu-box',
        'server.port': 11500,
        'error.type': 'crashed',
        'ollama_runner.task_id': 'esc-task',
        'ollama_runner.busy_try': 0,
      });
      expect(attempt!.attributes['ollama_runner.run_id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(attempt!.events).toContain('started');
      expect(attempt!.status.code).toBe(2); // ERROR
    }
  });

  it('the escalation shows on the third call and its attempt, as attributes a query can filter on', () => {
    const calls = serverSpans().filter((s) => s.traceId === CALLER_TRACE);
    const escalated = calls.filter((s) => s.attributes['ollama_runner.escalate'] === true);
    expect(escalated).toHaveLength(1);
    expect(escalated[0]!.attributes['ollama_runner.escalation_reason']).toBe('max_retries_exceeded');
    const attempt = childrenOf(escalated[0]!)[0]!;
    expect(attempt.attributes).toMatchObject({
      'ollama_runner.escalate': true,
      'ollama_runner.escalation_reason': 'max_retries_exceeded',
      'ollama_runner.retry_count': 2,
    });
    const others = calls.filter((s) => s !== escalated[0]).map((s) => s.attributes['ollama_runner.escalate']);
    expect(others).toEqual([false, false]);
  });

  it('a successful attempt carries its tokens and first byte; no prompt or answer is exported', () => {
    const ok = spans.find((s) => s.kind === CLIENT_KIND && s.attributes['gen_ai.request.model'] === 'qwen2.5-coder:7b')!;
    expect(ok.attributes['error.type']).toBeUndefined();
    expect(ok.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(ok.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(ok.events).toEqual(expect.arrayContaining(['started', 'first_byte']));
    const parent = spans.find((s) => s.spanId === ok.parentSpanId)!;
    expect(parent).toMatchObject({ kind: SERVER_KIND, parentSpanId: '' });
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain('say hi');
    expect(everything).not.toContain('fake answer');
  });

  it('a batch: one span per job under the batch call, each job with its attempt', () => {
    const batch = serverSpans().find((s) => s.name === 'tools/call ollama_run_many')!;
    const jobs = childrenOf(batch);
    expect(jobs.map((j) => [j.name, j.kind])).toEqual([
      ['ollama_run_many job', INTERNAL_KIND],
      ['ollama_run_many job', INTERNAL_KIND],
    ]);
    for (const job of jobs) {
      expect(job.attributes['ollama_runner.status']).toBe('ok');
      expect(childrenOf(job).map((a) => a.name)).toEqual(['chat llama3.2']);
    }
  });

  it('says nothing of OpenTelemetry on stderr when the collector takes every export', () => {
    expect(stderr).not.toContain('OpenTelemetry');
  });
});

describe('OpenTelemetry with no collector listening', () => {
  it('the server answers calls, and exits once stdin closes with one line at most about the failed export', async () => {
    const port = await closedPort();
    const sandbox = makeSandbox();
    const child = spawn(process.execPath, [SERVER_ENTRY], {
      env: serverEnv(sandbox, { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'hello' } },
    });
    await waitUntil(() => stdout.includes('"id":2'));
    expect(stdout).toContain('fake answer from llama3.2');
    child.stdin.end();
    // Far less than the exporter's own 10 s timeout and retries, which used to hold the exit.
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 5_000))]);
    if (code === 'still running') child.kill('SIGKILL');
    expect(code).toBe(0);
    const otelLines = stderr.split('\n').filter((line) => line.includes('OpenTelemetry'));
    expect(otelLines.length).toBeLessThanOrEqual(1);
    removeTempDir(sandbox.root);
  }, 30_000);
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!done()) throw new Error('timed out waiting');
}
