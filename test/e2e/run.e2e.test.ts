import { describe, expect, it } from 'vitest';
import { readRuns, readRunTrace, readTrace, startTestServer, useServer } from './harness.js';

describe('ollama_run end to end: answers and outcome classification', () => {
  const server = useServer({ OLLAMA_MCP_MAX_OUTPUT_BYTES: '20000', OLLAMA_MCP_BREAKER_THRESHOLD: '100' });

  it('returns the answer with metadata; the prompt goes over stdin, never argv, and word wrap is off', async () => {
    const secret = 'summarise the quarterly report for ACME';
    const result = await server.run({ model: 'llama3.2', prompt: secret, task_id: 'ok-1' });
    expect(result.isError).toBe(false);
    expect(result.output).toBe(`fake answer from llama3.2: ${secret}`);
    expect(result.metadata).toMatchObject({
      status: 'ok',
      ok: true,
      escalate: false,
      escalation_reason: null,
      model: 'llama3.2',
      task_id: 'ok-1',
      retry_count: 0,
      max_retries: 3,
      exit_code: 0,
      timed_out: false,
      truncated: false,
      error: null,
      circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null },
    });
    expect(result.metadata.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.text).toContain(result.output);

    const start = readRunTrace(server.sandbox).find((e) => e.event === 'start' && e.argv?.includes('llama3.2'));
    expect(start?.argv).toContain('--nowordwrap');
    expect(start?.argv?.join(' ')).not.toContain('quarterly');
    const line = readRuns(server.sandbox).find((r) => r.run_id === result.metadata.run_id);
    expect(line).toMatchObject({ status: 'ok', model: 'llama3.2', task_id: 'ok-1', prompt_chars: secret.length });
    expect(JSON.stringify(line)).not.toContain('quarterly'); // no prompt text by default
  });

  it('keeps the thinking block out of the answer, and returns it only when asked', async () => {
    const plain = await server.run({ model: 'qwen3:8b', prompt: 'what is 2+2' });
    expect(plain.output).toBe('fake answer from qwen3:8b: what is 2+2');
    expect(plain.output).not.toContain('Thinking');
    expect(plain.metadata.thinking_chars).toBeGreaterThan(0);
    expect(plain.thinking).toBeUndefined();
    const withThinking = await server.run({ model: 'qwen3:8b', prompt: 'what is 2+2', include_thinking: true });
    expect(withThinking.thinking?.length).toBe(withThinking.metadata.thinking_chars);
  });

  it.each([
    [
      'a missing model fails as not found and escalates at once',
      { model: 'no-such-model:1b', prompt: 'x' },
      'model_not_found',
      'model_not_found',
    ],
    [
      'a cloud model without sign-in exits 0 but is not a success',
      { model: 'gpt-oss:120b-cloud', prompt: 'x' },
      'signin_required',
      'signin_required',
    ],
    ['a busy server is retryable, not escalated', { model: 'llama3.2', prompt: 'x @fake:error=busy' }, 'server_busy', null],
    [
      'an unreachable server escalates at once',
      { model: 'llama3.2', prompt: 'x @fake:error=unreachable' },
      'ollama_unreachable',
      'ollama_unreachable',
    ],
    ['an empty answer is a failure', { model: 'llama3.2', prompt: 'x @fake:empty' }, 'empty_output', null],
    ['a non-zero exit is a crash with the CLI error text', { model: 'llama3.2', prompt: 'x @fake:exit=1' }, 'crashed', null],
    ['a model killed by a signal is a crash', { model: 'llama3.2', prompt: 'x @fake:crash_signal=SIGSEGV' }, 'crashed', null],
    [
      '--think on a model that cannot think is an unsupported option',
      { model: 'llama3.2', prompt: 'x', think: true },
      'unsupported_option',
      null,
    ],
  ] as const)('%s', async (_name, args, status, reason) => {
    const result = await server.run(args);
    expect(result.isError).toBe(true);
    expect(result.metadata.status).toBe(status);
    expect(result.metadata.ok).toBe(false);
    expect(result.metadata.escalate).toBe(reason !== null);
    expect(result.metadata.escalation_reason).toBe(reason);
    expect(result.metadata.error?.kind).toBe(status);
    expect(result.metadata.error?.message.length).toBeGreaterThan(0);
  });

  it('a model that floods stdout is stopped at the cap and its output marked truncated', async () => {
    const result = await server.run({ model: 'llama3.2', prompt: 'x @fake:flood_bytes=50000000', timeout_ms: 20_000 });
    expect(result.metadata.status).toBe('output_limit');
    expect(result.metadata.truncated).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(20_000);
    expect(result.output.length).toBeGreaterThan(10_000);
  });

  it('every attempt above left exactly one parseable line in runs.jsonl', async () => {
    const runs = readRuns(server.sandbox);
    // 1 + 2 + 8 + 1 calls above; the busy one's retries inside the call (OLLAMA_MCP_BUSY_RETRIES, 3) have lines of their own
    expect(runs.filter((r) => r.will_retry !== true).length).toBe(12);
    expect(runs.length).toBe(12 + 3);
    for (const run of runs) {
      expect(run).toMatchObject({ v: 2, tool: 'ollama_run' });
      expect(typeof run.ts).toBe('string');
      expect(run).not.toHaveProperty('prompt');
      expect(run).not.toHaveProperty('output');
    }
    expect(new Set(runs.map((r) => r.run_id)).size).toBe(runs.length);
  });
});

describe('a server whose CLI cannot be run', () => {
  it('reports cli_not_found and escalates, without crashing', async () => {
    const server = await startTestServer({ OLLAMA_BIN: '/nonexistent/ollama' });
    const result = await server.run({ model: 'llama3.2', prompt: 'x' });
    expect(result.metadata).toMatchObject({ status: 'cli_not_found', escalate: true, escalation_reason: 'cli_not_found' });
    expect(result.metadata.error?.message).toContain('/nonexistent/ollama');
    const again = await server.run({ model: 'llama3.2', prompt: 'x' });
    expect(again.metadata.status).toBe('cli_not_found');
  });
});

describe('model preflight', () => {
  it('an uninstalled model never reaches `ollama run`: it fails fast, listing the installed models', async () => {
    const server = await startTestServer({ FAKE_OLLAMA_PULLABLE: 'tinyllama:latest' });
    const { sandbox } = server;
    const result = await server.run({ model: 'tinyllama', prompt: 'hi', task_id: 'pf' });
    expect(result.metadata).toMatchObject({
      status: 'model_not_found',
      escalate: true,
      escalation_reason: 'model_not_found',
      duration_ms: 0,
    });
    expect(result.metadata.error?.message).toContain('installed: llama3.2:latest, qwen2.5-coder:7b');
    expect(result.metadata.error?.message).toContain('allow_pull');
    expect(readRunTrace(sandbox).filter((e) => e.event === 'start')).toHaveLength(0);

    // name and name:latest are the same model; the list is cached, not read again for every run.
    const listsBefore = readTrace(sandbox).filter((e) => e.event === 'start' && e.argv?.[0] === 'list').length;
    expect((await server.run({ model: 'llama3.2:latest', prompt: 'a' })).metadata.status).toBe('ok');
    expect((await server.run({ model: 'library/llama3.2', prompt: 'b' })).metadata.status).toBe('ok');
    expect(readTrace(sandbox).filter((e) => e.event === 'start' && e.argv?.[0] === 'list').length).toBe(listsBefore);

    // allow_pull lets the CLI pull it.
    const pulled = await server.run({ model: 'tinyllama', prompt: 'hi', allow_pull: true });
    expect(pulled.metadata.status).toBe('ok');
  });
});
