import { describe, expect, it } from 'vitest';
import { readRuns, spawnCount, useServer } from './harness.js';

describe('bad input never spawns a process and gets a specific error', () => {
  const server = useServer();

  it.each([
    ['a missing model', { prompt: 'x' }, '`model` is required'],
    ['a model starting with -', { model: '--help', prompt: 'x' }, '`model`: must be an Ollama model name'],
    ['a model with shell characters', { model: 'llama3.2; rm -rf ~', prompt: 'x' }, 'got "llama3.2; rm -rf ~"'],
    ['a model with whitespace', { model: 'llama 3', prompt: 'x' }, '`model`'],
    ['a model that is not a string', { model: 42, prompt: 'x' }, '`model`'],
    ['a missing prompt', { model: 'llama3.2' }, '`prompt` is required'],
    ['an empty prompt', { model: 'llama3.2', prompt: '' }, '`prompt`: must not be empty'],
    ['a whitespace prompt', { model: 'llama3.2', prompt: ' \n\t ' }, '`prompt`: must not be empty'],
    ['a huge prompt', { model: 'llama3.2', prompt: 'x'.repeat(1_000_001) }, 'at most 1000000 characters'],
    ['a negative retry_count', { model: 'llama3.2', prompt: 'x', retry_count: -1 }, '`retry_count`: must be 0 or more'],
    ['a fractional max_retries', { model: 'llama3.2', prompt: 'x', max_retries: 1.5 }, '`max_retries`: must be a whole number'],
    ['a timeout below the range', { model: 'llama3.2', prompt: 'x', timeout_ms: 5 }, '`timeout_ms`: must be at least 100'],
    ['a timeout above the range', { model: 'llama3.2', prompt: 'x', timeout_ms: 10_000_000 }, 'at most 3600000'],
    ['an unsafe task_id', { model: 'llama3.2', prompt: 'x', task_id: '../../etc' }, '`task_id`'],
    ['a keepalive without unit', { model: 'llama3.2', prompt: 'x', keepalive: '10' }, '`keepalive`: must be a duration'],
    ['a bad format', { model: 'llama3.2', prompt: 'x', format: 'yaml' }, '`format`'],
    ['a bad think', { model: 'llama3.2', prompt: 'x', think: 'max' }, '`think`'],
    ['an unknown argument', { model: 'llama3.2', prompt: 'x', system: 'be nice' }, 'unknown argument `system`'],
  ])('%s', async (_name, args, message) => {
    const spawnsBefore = spawnCount(server.sandbox);
    const linesBefore = readRuns(server.sandbox).length;
    const result = await server.run(args);
    expect(result.isError).toBe(true);
    expect(result.metadata).toMatchObject({ status: 'invalid_input', ok: false, escalate: false, duration_ms: 0 });
    expect(result.metadata.error?.message).toContain(message);
    expect(result.text).toContain('nothing was run');
    expect(spawnCount(server.sandbox)).toBe(spawnsBefore);
    const runs = readRuns(server.sandbox);
    expect(runs).toHaveLength(linesBefore + 1);
    expect(runs.at(-1)).toMatchObject({ status: 'invalid_input' });
  });

  it('an unknown tool name is an error, not a crash, and the server keeps serving', async () => {
    const result = await server.client.callTool({ name: 'ollama_nope', arguments: {} });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('Unknown tool `ollama_nope`');
    expect((await server.run({ model: 'llama3.2', prompt: 'still alive?' })).metadata.status).toBe('ok');
  });

  it('lists ollama_run with a strict input schema and the output schema', async () => {
    const { tools } = await server.client.listTools();
    const tool = tools.find((t) => t.name === 'ollama_run')!;
    expect(tool.inputSchema.required).toEqual(['model', 'prompt']);
    expect(tool.inputSchema.additionalProperties).toBe(false);
    expect(tool.outputSchema?.properties).toHaveProperty('metadata');
    expect(tool.description).toContain('escalate');
  });
});
