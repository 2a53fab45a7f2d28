import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import type { AttemptInfo, CallEvent } from '../../../src/app/attempt/types.js';
import type { RunResult } from '../../../src/app/reply/run-result.js';
import { callSpans } from '../../../src/otel/call-spans.js';
import { makeInstruments } from '../../../src/otel/instruments.js';

function info(runId: string, busyTry: number, batchId: string | null = null): AttemptInfo {
  return {
    runId,
    callId: 'call-1',
    model: 'llama3.2',
    taskId: 't-1',
    callerRetryCount: null,
    chainId: null,
    chainStep: null,
    busyTry,
    batchId,
    maxRetries: 3,
    timeoutMs: 1000,
    startTimeoutMs: 1000,
    promptChars: 5,
  };
}

function result(runId: string, status: 'ok' | 'server_busy'): RunResult {
  const ok = status === 'ok';
  return {
    output: ok ? 'the answer' : '',
    metadata: {
      status,
      ok,
      escalate: false,
      escalation_reason: null,
      retryable: !ok,
      model: 'llama3.2',
      task_id: 't-1',
      run_id: runId,
      retry_count: 0,
      max_retries: 3,
      retries_left: 3,
      exit_code: ok ? 0 : 1,
      signal: null,
      timed_out: false,
      truncated: false,
      duration_ms: 50,
      queue_ms: 2,
      start_ms: ok ? 10 : null,
      timeout_ms: 1000,
      start_timeout_ms: 1000,
      cold_load: false,
      prompt_chars: 5,
      output_chars: ok ? 10 : 0,
      thinking_chars: 0,
      usage: {
        prompt_tokens: ok ? 12 : null,
        output_tokens: ok ? 3 : null,
        tokens_per_second: null,
        prompt_tokens_per_second: null,
        load_ms: null,
        total_ms: null,
      },
      circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null },
      error: ok ? null : { kind: 'server_busy', message: 'server busy' },
      warnings: [],
      chain_id: null,
      fallback: [],
      busy_retries: 0,
      output_file: null,
      thinking_file: null,
    },
  };
}

function setUp() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const instruments = makeInstruments(new MeterProvider().getMeter('t'));
  const parentSpan = provider.getTracer('t').startSpan('tools/call ollama_run');
  const deps = {
    tracer: provider.getTracer('t'),
    instruments,
    server: { address: '127.0.0.1', port: 11434 },
    captureContent: false,
    parentOf: () => trace.setSpan(ROOT_CONTEXT, parentSpan),
  };
  return { exporter, deps, parentSpan, provider };
}

describe("a call's events as spans", () => {
  it('a busy retry: the first attempt ends with its busy wait, the second with its result, both under the call', async () => {
    const { exporter, deps, parentSpan, provider } = setUp();
    const listen = callSpans(deps, { model: 'llama3.2', prompt: 'hello' }, {});
    const first = info('run-1', 0);
    const second = info('run-2', 1);
    const events: CallEvent[] = [
      { type: 'queued', reason: () => ({ kind: 'concurrency', ahead: 1 }), attempt: first },
      { type: 'started', cold: true, attempt: first },
      { type: 'ended', status: 'server_busy', willRetry: true, result: result('run-1', 'server_busy'), attempt: first },
      { type: 'busy_wait', retry: 1, of: 3, waitMs: 500, status: 'server_busy', attempt: first },
      { type: 'started', cold: false, attempt: second },
      { type: 'output', bytes: 10, attempt: second },
      { type: 'first_byte', attempt: second },
      { type: 'ended', status: 'ok', willRetry: false, result: result('run-2', 'ok'), attempt: second },
    ];
    for (const event of events) await listen(event);
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['chat llama3.2', 'chat llama3.2']);
    const [busy, ok] = spans;
    expect(busy!.events.map((e) => e.name)).toEqual(['queued', 'started', 'cold_load', 'busy_wait']);
    expect(busy!.attributes).toMatchObject({ 'error.type': 'server_busy', 'ollama_runner.will_retry': true });
    expect(ok!.events.map((e) => e.name)).toEqual(['started', 'first_byte']);
    expect(ok!.attributes).toMatchObject({ 'ollama_runner.busy_try': 1, 'gen_ai.usage.output_tokens': 3 });
    expect(ok!.attributes['error.type']).toBeUndefined();
    for (const span of spans) expect(span.parentSpanContext?.spanId).toBe(parentSpan.spanContext().spanId);
  });

  it("a batch's job: its own span under the batch's, ended with the job's result", async () => {
    const { exporter, deps, parentSpan, provider } = setUp();
    const listen = callSpans(deps, { model: 'llama3.2', prompt: 'hello', taskId: 't-1' }, { batchId: 'b-1' });
    const attempt = info('run-1', 0, 'b-1');
    await listen({ type: 'started', cold: false, attempt });
    await listen({ type: 'ended', status: 'ok', willRetry: false, result: result('run-1', 'ok'), attempt });
    await provider.forceFlush();
    const [chat, job] = exporter.getFinishedSpans();
    expect(job).toMatchObject({ name: 'ollama_run_many job' });
    expect(job!.attributes).toMatchObject({ 'ollama_runner.batch_id': 'b-1', 'ollama_runner.status': 'ok' });
    expect(job!.parentSpanContext?.spanId).toBe(parentSpan.spanContext().spanId);
    expect(chat!.parentSpanContext?.spanId).toBe(job!.spanContext().spanId);
  });

  it('with several Ollama hosts, an attempt span names the host it was sent to', async () => {
    const { exporter, deps, provider } = setUp();
    const listen = callSpans(deps, { model: 'llama3.2', prompt: 'hello' }, {});
    const attempt = info('run-1', 0);
    await listen({ type: 'started', cold: false, host: 'gpu-box:11500', attempt });
    await listen({ type: 'ended', status: 'ok', willRetry: false, result: result('run-1', 'ok'), attempt });
    await provider.forceFlush();
    const [chat] = exporter.getFinishedSpans();
    expect(chat!.attributes).toMatchObject({ 'server.address': 'gpu-box', 'server.port': 11500 });
  });
});
