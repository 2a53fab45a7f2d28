import { describe, expect, it } from 'vitest';
import type { AttemptInfo } from '../../../src/app/attempt/types.js';
import type { RunMetadata, RunResult } from '../../../src/app/reply/run-result.js';
import {
  attemptAttributes,
  attemptSpanName,
  endedAttributes,
  escalationOf,
  ollamaServer,
  safeText,
  toolCallEndAttributes,
  toolCallSpan,
} from '../../../src/otel/attributes.js';

const INFO: AttemptInfo = {
  runId: '3f1c9a0e-5b7d-4c1e-9a44-0d6f2b8e7c11',
  callId: 'call-1',
  model: 'qwen2.5-coder:7b',
  taskId: 'fm-42',
  callerRetryCount: null,
  chainId: 'chain-1',
  chainStep: 1,
  busyTry: 2,
  batchId: null,
  maxRetries: 3,
  timeoutMs: 120_000,
  startTimeoutMs: 300_000,
  promptChars: 11,
};

function resultOf(overrides: Partial<RunMetadata> = {}, output = 'def add(a, b): return a + b'): RunResult {
  const metadata: RunMetadata = {
    status: 'ok',
    ok: true,
    escalate: false,
    escalation_reason: null,
    retryable: false,
    model: 'qwen2.5-coder:7b',
    task_id: 'fm-42',
    run_id: INFO.runId,
    retry_count: 0,
    max_retries: 3,
    retries_left: 3,
    exit_code: 0,
    signal: null,
    timed_out: false,
    truncated: false,
    duration_ms: 1200,
    queue_ms: 3,
    start_ms: 400,
    timeout_ms: 120_000,
    start_timeout_ms: 300_000,
    cold_load: true,
    prompt_chars: 11,
    output_chars: output.length,
    thinking_chars: 0,
    usage: {
      prompt_tokens: 41,
      output_tokens: 14,
      tokens_per_second: 38.5,
      prompt_tokens_per_second: null,
      load_ms: 900,
      total_ms: 1100,
    },
    circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null },
    error: null,
    warnings: [],
    chain_id: null,
    fallback: [],
    busy_retries: 0,
    output_file: null,
    thinking_file: null,
    ...overrides,
  };
  return { output, metadata };
}

describe('the attempt span (GenAI conventions)', () => {
  it('is named `{operation} {model}` and says model, provider, host and where it stands in its call', () => {
    expect(attemptSpanName(INFO)).toBe('chat qwen2.5-coder:7b');
    expect(attemptAttributes(INFO, { address: 'gpu-box', port: 11434 })).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'ollama',
      'gen_ai.request.model': 'qwen2.5-coder:7b',
      'server.address': 'gpu-box',
      'server.port': 11434,
      'ollama_runner.run_id': INFO.runId,
      'ollama_runner.busy_try': 2,
      'ollama_runner.max_retries': 3,
      'ollama_runner.task_id': 'fm-42',
      'ollama_runner.call_id': 'call-1',
      'ollama_runner.chain_id': 'chain-1',
      'ollama_runner.chain_step': 1,
    });
  });

  it('an ok attempt has its tokens and no error.type; the prompt and answer stay out unless opted in', () => {
    const ended = endedAttributes(resultOf(), false, null);
    expect(ended).toMatchObject({
      'gen_ai.usage.input_tokens': 41,
      'gen_ai.usage.output_tokens': 14,
      'ollama_runner.status': 'ok',
      'ollama_runner.escalate': false,
      'ollama_runner.cold_load': true,
    });
    expect(ended['error.type']).toBeUndefined();
    expect(JSON.stringify(ended)).not.toContain('def add');
    expect(ended['gen_ai.input.messages']).toBeUndefined();
  });

  it('opted in, the prompt and answer are the conventions message lists, as JSON', () => {
    const ended = endedAttributes(resultOf({}, 'line 1\n\u001b[2Jline 2'), false, { prompt: 'Write add()' });
    expect(JSON.parse(String(ended['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'Write add()' }] },
    ]);
    expect(String(ended['gen_ai.output.messages'])).not.toMatch(/[\u0000-\u001f]/);
  });

  it('a failed attempt says its status as error.type, and the escalation a query filters on', () => {
    const failed = resultOf({
      status: 'crashed',
      ok: false,
      escalate: true,
      escalation_reason: 'max_retries_exceeded',
      retry_count: 3,
      retries_left: 0,
      usage: { ...resultOf().metadata.usage, prompt_tokens: null, output_tokens: null },
    });
    const ended = endedAttributes(failed, false, null);
    expect(ended).toMatchObject({
      'error.type': 'crashed',
      'ollama_runner.escalate': true,
      'ollama_runner.escalation_reason': 'max_retries_exceeded',
      'ollama_runner.retry_count': 3,
    });
    expect(ended['gen_ai.usage.input_tokens']).toBeUndefined();
  });
});

describe('the tools/call span (MCP conventions)', () => {
  const info = { tool: 'ollama_run', requestId: 7, meta: undefined, protocolVersion: '2025-06-18' };

  it('is named `tools/call {tool}` with the method, tool, request id, version and transport', () => {
    expect(toolCallSpan(info, 'pipe')).toEqual({
      name: 'tools/call ollama_run',
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': 'ollama_run',
        'gen_ai.operation.name': 'execute_tool',
        'jsonrpc.request.id': '7',
        'mcp.protocol.version': '2025-06-18',
        'network.transport': 'pipe',
      },
    });
  });

  it('an isError answer is a tool_error; the escalation of a run or of any job of a batch shows', () => {
    expect(toolCallEndAttributes({ isError: false })).toEqual({ 'ollama_runner.escalate': false });
    const run = { isError: true, metadata: { escalate: true, escalation_reason: 'circuit_open' } };
    expect(toolCallEndAttributes(run)).toEqual({
      'ollama_runner.escalate': true,
      'ollama_runner.escalation_reason': 'circuit_open',
      'error.type': 'tool_error',
    });
    const batch = { metadata: { escalate: true, jobs: [{ escalate: false }, { escalate: true, escalation_reason: 'blocked' }] } };
    expect(escalationOf(batch)).toBe('blocked');
    expect(escalationOf({ metadata: { escalate: false, jobs: [] } })).toBeNull();
    expect(escalationOf({ task: { taskId: 't' } })).toBeNull();
  });
});

describe('attribute text', () => {
  it('carries no control or bidi characters, and is cut when long', () => {
    expect(safeText('model\u001b]0;title\u0007\nnext\u202e')).toBe('model\\x1b]0;title\\x07\\x0anext\\u202e');
    expect(safeText('x'.repeat(5000))).toHaveLength(1000);
  });

  it('server.address and server.port from OLLAMA_HOST, as Ollama reads it', () => {
    expect(ollamaServer(undefined)).toEqual({ address: '127.0.0.1', port: 11434 });
    expect(ollamaServer('gpu-box')).toEqual({ address: 'gpu-box', port: 11434 });
    expect(ollamaServer('gpu-box:11500')).toEqual({ address: 'gpu-box', port: 11500 });
    expect(ollamaServer('http://10.0.0.5:11434/')).toEqual({ address: '10.0.0.5', port: 11434 });
    expect(ollamaServer('https://ollama.example')).toEqual({ address: 'ollama.example', port: 443 });
    expect(ollamaServer('[::1]:11434')).toEqual({ address: '::1', port: 11434 });
  });
});
