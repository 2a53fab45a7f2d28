import { afterAll, describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, readTrace, startServer, useServer, type RunningServer, type Sandbox } from './harness.js';

/** Non-`run` CLI commands the server spawned (`ps`, `show`), in order. */
function lookups(sandbox: Sandbox): string[] {
  return readTrace(sandbox)
    .filter((e) => e.event === 'start' && (e.argv?.[0] === 'ps' || e.argv?.[0] === 'show'))
    .map((e) => e.argv!.join(' '));
}

const USAGE_KEYS = ['prompt_tokens', 'output_tokens', 'tokens_per_second', 'prompt_tokens_per_second', 'load_ms', 'total_ms'];
const NULL_USAGE = Object.fromEntries(USAGE_KEYS.map((k) => [k, null]));

describe('token usage from ollama run --verbose, through the built server', () => {
  const server = useServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '100' });

  it('reports usage in the result, the text and the log, keeps the stats out of the answer, and spawns nothing more', async () => {
    const result = await server.run({ model: 'llama3.2', prompt: 'count the words in this sentence', task_id: 'u-1' });
    expect(result.metadata.status).toBe('ok');
    expect(result.output).toBe('fake answer from llama3.2: count the words in this sentence');
    const usage = result.metadata.usage;
    expect(Object.keys(usage)).toEqual(USAGE_KEYS);
    // The fake counts a token per 4 prompt bytes + 10 and one per streamed word.
    expect(usage.prompt_tokens).toBe(Math.ceil('count the words in this sentence'.length / 4) + 10);
    expect(usage.output_tokens).toBe(result.output.split(' ').length);
    for (const key of ['tokens_per_second', 'prompt_tokens_per_second', 'load_ms', 'total_ms'] as const) {
      expect(usage[key]).toBeGreaterThan(0);
    }
    expect(result.metadata.warnings).toEqual([]);
    expect(result.text).toContain(
      `tokens: ${usage.prompt_tokens} in, ${usage.output_tokens} out, ${usage.tokens_per_second} tok/s`,
    );
    expect(result.output + result.text.split('metadata:')[0]).not.toMatch(/duration:|eval rate|token\(s\)/);

    const line = readRuns(server.sandbox).find((r) => r.run_id === result.metadata.run_id)!;
    expect(line.v).toBe(2);
    expect(line.usage).toEqual(usage);
    const keys = Object.keys(line);
    expect(keys.indexOf('usage')).toBe(keys.indexOf('thinking_chars') + 1);

    const start = readTrace(server.sandbox).find((e) => e.event === 'start' && e.argv?.[0] === 'run');
    expect(start?.argv).toContain('--verbose');
    expect(lookups(server.sandbox)).toEqual([]); // a small prompt never pays for a context lookup
  });

  it('the load time of a cold model shows in the verdict', async () => {
    const cold = await startServer(server.sandbox, { FAKE_OLLAMA_LOAD_MS: '3500.5' });
    try {
      const result = await cold.run({ model: 'llama3.2', prompt: 'hello' });
      expect(result.metadata.usage.load_ms).toBe(3500.5);
      expect(result.text).toContain('(cold load: 3.5 s)');
    } finally {
      await cold.close();
    }
  });

  it('usage is all null when the CLI reported nothing: timeouts, error, refusal', async () => {
    const neverBegan = await server.run({ model: 'llama3.2', prompt: 'wait @fake:hang', start_timeout_ms: 1000 });
    expect(neverBegan.metadata.status).toBe('start_timeout');
    expect(neverBegan.metadata.usage).toEqual(NULL_USAGE);
    const timedOut = await server.run({ model: 'llama3.2', prompt: 'long answer @fake:sleep_ms=3000', timeout_ms: 300 });
    expect(timedOut.metadata.status).toBe('timeout');
    expect(timedOut.metadata.usage).toEqual(NULL_USAGE);

    const failed = await server.run({ model: 'llama3.2', prompt: 'x @fake:error=runner_stopped' });
    expect(failed.metadata.status).toBe('crashed');
    expect(failed.metadata.usage).toEqual(NULL_USAGE);
    expect(failed.metadata.error?.message).toContain('model runner has unexpectedly stopped');

    const missing = await server.run({ model: 'no-such-model:1b', prompt: 'x' });
    expect(missing.metadata.usage).toEqual(NULL_USAGE);
    expect(missing.text).not.toContain('tokens:');

    const lines = readRuns(server.sandbox).filter((r) => [timedOut, failed, missing].some((x) => x.metadata.run_id === r.run_id));
    expect(lines.map((l) => l.usage)).toEqual([NULL_USAGE, NULL_USAGE, NULL_USAGE]);
  });

  it('usage comes back per job from ollama_run_many, in its outputSchema', async () => {
    const result = await server.client.callTool({
      name: 'ollama_run_many',
      arguments: {
        response_format: 'detailed',
        jobs: [
          { model: 'llama3.2', prompt: 'one' },
          { model: 'qwen2.5-coder:7b', prompt: 'two words' },
        ],
      },
    });
    const jobs = (result.structuredContent as { results: { metadata: { usage: Record<string, unknown> } }[] }).results;
    expect(jobs.map((j) => j.metadata.usage.prompt_tokens)).toEqual([11, 13]);
    const tools = await server.client.listTools();
    for (const name of ['ollama_run', 'ollama_run_many']) {
      expect(JSON.stringify(tools.tools.find((t) => t.name === name)?.outputSchema)).toContain('"prompt_tokens_per_second"');
    }
  });
});

describe('the prompt_may_be_truncated warning, through the built server', () => {
  const servers: RunningServer[] = [];
  afterAll(async () => Promise.all(servers.map((s) => s.close())));
  async function serve(env: Record<string, string> = {}): Promise<{ sandbox: Sandbox; server: RunningServer }> {
    const sandbox = makeSandbox();
    const server = await startServer(sandbox, env);
    servers.push(server);
    return { sandbox, server };
  }

  it('warns when the prompt filled the loaded context (ps CONTEXT), in metadata, the text and the log; cached for the next run', async () => {
    const { sandbox, server } = await serve(); // v0.12: context 4096, a cut prompt counts 4096
    const result = await server.run({ model: 'llama3.2', prompt: 'a long document @fake:prompt_tokens=6000' });
    expect(result.metadata.status).toBe('ok');
    expect(result.metadata.usage.prompt_tokens).toBe(4096);
    const warning = result.metadata.warnings.find((w) => w.kind === 'prompt_may_be_truncated');
    expect(warning?.message).toMatch(/^prompt used 4096 tokens of a 4096-token context \(the context `ollama ps` shows/);
    expect(result.text).toContain(`WARNING (prompt_may_be_truncated): ${warning?.message}`);
    const line = readRuns(sandbox).find((r) => r.run_id === result.metadata.run_id)!;
    expect(line.warnings).toEqual([warning]);
    expect(lookups(sandbox)).toEqual(['ps']);

    const again = await server.run({ model: 'llama3.2', prompt: 'again @fake:prompt_tokens=9000' });
    expect(again.metadata.warnings.map((w) => w.kind)).toEqual(['prompt_may_be_truncated']);
    expect(lookups(sandbox)).toEqual(['ps']); // from the cache
  });

  it('does not warn for a large prompt that fit', async () => {
    const { sandbox, server } = await serve();
    const result = await server.run({ model: 'qwen2.5-coder:7b', prompt: 'review this @fake:prompt_tokens=3000' });
    expect(result.metadata.usage.prompt_tokens).toBe(3000);
    expect(result.metadata.warnings).toEqual([]);
    expect(lookups(sandbox)).toEqual(['ps']); // large enough to look, and it fit
  });

  it('recognises the length Ollama v0.30.11+ cuts a prompt to (about half the context)', async () => {
    const { server } = await serve({ FAKE_OLLAMA_VERSION: '0.31.0' });
    const result = await server.run({ model: 'llama3.2', prompt: 'a long document @fake:prompt_tokens=6000' });
    expect(result.metadata.usage.prompt_tokens).toBe(2051);
    expect(result.metadata.warnings[0]?.message).toMatch(/^prompt used 2051 tokens, exactly what Ollama .* 4096-token context/);
  });

  it('with a CLI whose ps has no CONTEXT column, reads num_ctx from ollama show', async () => {
    const { sandbox, server } = await serve({ FAKE_OLLAMA_VERSION: '0.9.0', FAKE_OLLAMA_NUM_CTX: 'llama3.2=8192' });
    const result = await server.run({ model: 'llama3.2', prompt: 'a long document @fake:prompt_tokens=10000' });
    expect(result.metadata.usage.prompt_tokens).toBe(8192);
    expect(result.metadata.warnings[0]?.message).toMatch(/8192 tokens of a 8192-token context \(the model's num_ctx parameter\)/);
    expect(lookups(sandbox)).toEqual(['ps', 'show llama3.2']);
  });
});
