/**
 * What the agent reads. Claude Code, VS Code and the Codex app hand the model
 * `JSON.stringify(structuredContent)` and drop the text content: every result must say there, in few
 * bytes, what to do now, and an escalation must say to stop and escalate.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { readRuns, startTestServer, useServer, type RunningServer } from './harness.js';

/** What such a client hands the model, and the reply it came from. */
async function modelView(server: RunningServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: args });
  const json = JSON.stringify(result.structuredContent);
  return { json, reply: result.structuredContent as unknown as RunReply, isError: result.isError === true };
}

const STOP_AND_ESCALATE = /"next":"Stop: do not retry this task[^"]*; escalate it/;

describe('what a client that reads structuredContent hands the model', () => {
  const server = useServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '2', OLLAMA_MCP_BREAKER_COOLDOWN_MS: '600000' });
  beforeAll(async () => {
    await server.client.listTools(); // the SDK client then checks every ok result against its outputSchema
  });

  /** The runs.jsonl line of the last attempt: written from the full metadata. */
  const lastLine = () =>
    readRuns(server.sandbox)
      .filter((r) => r.kind !== 'control')
      .at(-1)!;

  it('an ok run: the answer and at most 150 bytes of verdict', async () => {
    const { json, reply } = await modelView(server, 'ollama_run', { model: 'llama3.2', prompt: 'hi', task_id: 'ok-1' });
    expect(json).toBe('{"ok":true,"status":"ok","escalate":false,"output":"fake answer from llama3.2: hi"}');
    expect(json.length - reply.output.length).toBeLessThanOrEqual(150);
  });

  it('a retryable failure: at most 600 bytes, saying how to retry', async () => {
    const { json, reply } = await modelView(server, 'ollama_run', {
      model: 'qwen3:8b',
      prompt: 'broken @fake:exit=1',
      task_id: 'retry-1',
    });
    expect(reply).toMatchObject({ ok: false, status: 'crashed', escalate: false, retryable: true, retries_left: 3 });
    expect(reply.next).toBe('Retry with the same task_id (3 tries left).');
    expect(json.length).toBeLessThanOrEqual(600);
    expect(json).not.toContain('metadata');
  });

  it('max_retries_exceeded: stop and escalate, the same decision runs.jsonl records', async () => {
    // Its second failure in a row also opens qwen3:8b's circuit (threshold 2): the reason stays the task's.
    const call = { model: 'qwen3:8b', prompt: 'broken @fake:exit=1', task_id: 'retry-1', max_retries: 1 };
    const { json, reply } = await modelView(server, 'ollama_run', call);
    expect(reply).toMatchObject({ escalate: true, escalation_reason: 'max_retries_exceeded', model_available_in_seconds: 600 });
    expect(json).toMatch(STOP_AND_ESCALATE);
    expect(reply.next).toContain('Do not use qwen3:8b for 600 s');
    expect(lastLine()).toMatchObject({ task_id: 'retry-1', escalate: true, escalation_reason: 'max_retries_exceeded' });
  });

  it('circuit_open: the failure that opens it, and the refusal after it, say stop and never invite a wait', async () => {
    await modelView(server, 'ollama_run', { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'c-1' });
    const opened = await modelView(server, 'ollama_run', { model: 'llama3.2', prompt: 'broken @fake:exit=1', task_id: 'c-2' });
    expect(opened.reply).toMatchObject({ escalate: true, escalation_reason: 'circuit_open', model_available_in_seconds: 600 });
    expect(lastLine()).toMatchObject({ task_id: 'c-2', escalate: true, escalation_reason: 'circuit_open' });
    const refused = await modelView(server, 'ollama_run', { model: 'llama3.2', prompt: 'fine', task_id: 'c-3' });
    expect(refused.reply).toMatchObject({ status: 'circuit_open', escalate: true, escalation_reason: 'circuit_open' });
    expect(lastLine()).toMatchObject({ task_id: 'c-3', status: 'circuit_open', escalate: true });
    for (const { json } of [opened, refused]) {
      expect(json).toMatch(/"next":"Stop: do not retry this task on llama3.2; escalate it, or run it on another model/);
      expect(json).toContain('takes no runs for 600 s');
      expect(json).not.toMatch(/retry_after|accept a run again|wait/i);
      expect(json.length).toBeLessThanOrEqual(600);
    }
  });

  it.each([
    ['model_not_found', { model: 'no-such-model:1b', prompt: 'x' }],
    ['ollama_unreachable', { model: 'qwen2.5-coder:7b', prompt: 'x @fake:error=unreachable' }],
    ['signin_required', { model: 'gpt-oss:120b-cloud', prompt: 'x' }],
    ['cloud_access_denied', { model: 'qwen2.5-coder:7b', prompt: 'x @fake:error=subscription' }],
  ])('%s: stop and escalate, the same decision runs.jsonl records', async (reason, args) => {
    const { json, reply } = await modelView(server, 'ollama_run', { ...args, task_id: `esc-${reason}` });
    expect(reply).toMatchObject({ ok: false, escalate: true, escalation_reason: reason });
    expect(json).toMatch(STOP_AND_ESCALATE);
    expect(reply).not.toHaveProperty('retries_left');
    expect(lastLine()).toMatchObject({ task_id: `esc-${reason}`, escalate: true, escalation_reason: reason });
  });

  it('a batch: the summary and which jobs must stop first, then each job as concise as a run', async () => {
    const { json, reply, isError } = await modelView(server, 'ollama_run_many', {
      jobs: [
        { model: 'qwen2.5-coder:7b', prompt: 'one', task_id: 'b-1' },
        { model: 'no-such-model:1b', prompt: 'two', task_id: 'b-2' },
      ],
    });
    expect(isError).toBe(true);
    const batch = reply as unknown as { summary: Record<string, unknown>; next: string; results: RunReply[] };
    expect(batch.summary).toEqual({ total: 2, ok: 1, failed: 1, escalated: 1, escalate: true });
    expect(batch.next).toMatch(/^Stop: do not retry task "b-2"; escalate it/);
    expect(batch.results.map((r) => [r.status, r.escalate])).toEqual([
      ['ok', false],
      ['model_not_found', true],
    ]);
    expect(JSON.stringify(batch.results[0]!).length - batch.results[0]!.output.length).toBeLessThanOrEqual(150);
    expect(json).not.toContain('metadata');
  });

  it('response_format "detailed" adds the whole record, and the text content has the facts without the JSON', async () => {
    const result = await server.client.callTool({
      name: 'ollama_run',
      arguments: { model: 'qwen2.5-coder:7b', prompt: 'hi', task_id: 'd-1', response_format: 'detailed' },
    });
    const reply = result.structuredContent as unknown as RunReply;
    expect(reply).toMatchObject({ ok: true, status: 'ok', metadata: { task_id: 'd-1', retry_count: 0, max_retries: 3 } });
    const concise = await server.client.callTool({ name: 'ollama_run', arguments: { model: 'qwen2.5-coder:7b', prompt: 'hi' } });
    const text = (concise.content as { text: string }[])[0]!.text;
    expect(text).toMatch(/^fake answer from qwen2.5-coder:7b: hi\n\nok: qwen2.5-coder:7b answered in \d+ ms/);
    expect(text).not.toContain('metadata');
  });
});

describe('cli_not_found through the built server', () => {
  it('says stop and escalate', async () => {
    const server = await startTestServer({ OLLAMA_BIN: '/nonexistent/ollama' });
    const { json, reply } = await modelView(server, 'ollama_run', { model: 'llama3.2', prompt: 'x', task_id: 'no-cli' });
    expect(reply).toMatchObject({ escalate: true, escalation_reason: 'cli_not_found' });
    expect(json).toMatch(STOP_AND_ESCALATE);
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ escalate: true, escalation_reason: 'cli_not_found' });
  });
});

describe('the model-visible tools/list: what every session pays before any call', () => {
  it('names, titles, descriptions and input schemas of all tools fit in 5 KB; each description under 2 KB', async () => {
    const server = await startTestServer();
    const { tools } = await server.client.listTools();
    const visible = tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema }));
    expect(JSON.stringify(visible).length).toBeLessThan(5_120);
    for (const tool of tools) expect(Buffer.byteLength(tool.description ?? ''), tool.name).toBeLessThan(2_048);
    // The critical rule comes first, where a cut description keeps it.
    const run = tools.find((t) => t.name === 'ollama_run')!;
    expect(run.description!.slice(0, 200)).toMatch(/Read `escalate` on every result: true means STOP/);
    const instructions = server.client.getInstructions() ?? '';
    expect(Buffer.byteLength(instructions)).toBeLessThan(2_048);
    expect(instructions.split('\n').filter((line) => /^\d\. /.test(line))).toHaveLength(5);
    expect(tools.map((t) => t.name)).not.toContain('ollama_runs_summary'); // a review tool: opt-in
  });

  it('OLLAMA_MCP_RUNS_SUMMARY_TOOL=1 lists the review tool too', async () => {
    const server = await startTestServer({ OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' });
    expect((await server.client.listTools()).tools.map((t) => t.name)).toContain('ollama_runs_summary');
  });
});
