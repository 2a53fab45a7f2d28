import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { describeIssues, registerTools } from '../../../src/mcp/tool-registry.js';
import type { AnyToolDefinition } from '../../../src/tools/tool-definition.js';
import { ollamaRunManyInputSchema } from '../../../src/tools/ollama-run-many.js';

/** A tool that records how it was called. */
function probeTool() {
  const calls: { kind: 'handle' | 'invalid'; value: unknown }[] = [];
  const tool: AnyToolDefinition = {
    name: 'probe',
    title: 'probe',
    description: 'probe',
    inputSchema: z.strictObject({ a: z.unknown().optional() }),
    outputSchema: z.object({ ok: z.boolean() }),
    annotations: {},
    async handle(input) {
      calls.push({ kind: 'handle', value: input });
      return { structured: { ok: true }, text: 'ran', isError: false };
    },
    async onInvalidInput(problem) {
      calls.push({ kind: 'invalid', value: problem });
      return { structured: { ok: false }, text: problem, isError: true };
    },
  };
  return { tool, calls };
}

async function connected(tool: AnyToolDefinition): Promise<Client> {
  const server = new Server({ name: 's', version: '1' }, { capabilities: { tools: {} } });
  registerTools(server, [tool]);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'c', version: '1' });
  await client.connect(clientSide);
  return client;
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
}

describe('registerTools', () => {
  it('refuses arguments nested too deep before the schema walks them', async () => {
    const { tool, calls } = probeTool();
    const client = await connected(tool);
    const result = await client.callTool({ name: 'probe', arguments: { a: nested(100_000) } });
    expect(result.isError).toBe(true);
    expect(calls).toEqual([
      { kind: 'invalid', value: 'Invalid arguments: `a`: nested deeper than 100 levels of objects and arrays.' },
    ]);
  });

  it('accepts arguments nested up to the limit', async () => {
    const { tool, calls } = probeTool();
    const client = await connected(tool);
    await client.callTool({ name: 'probe', arguments: { a: nested(98) } });
    expect(calls[0]!.kind).toBe('handle');
  });

  it('lets the schema see an own __proto__ argument, so a strict schema refuses it', async () => {
    const { tool, calls } = probeTool();
    const client = await connected(tool);
    const result = await client.callTool({
      name: 'probe',
      arguments: JSON.parse('{"__proto__":{"a":1}}') as Record<string, unknown>,
    });
    expect(result.isError).toBe(true);
    expect(calls).toEqual([{ kind: 'invalid', value: 'Invalid arguments: unknown argument `__proto__`.' }]);
  });
});

describe('describeIssues', () => {
  it('names a nested argument and shows the value given there', () => {
    const args = { jobs: [{ model: 'llama3.2', prompt: 'x' }, { model: 'bad model', prompt: 'x', extra: 1 }, { prompt: 'y' }] };
    const parsed = ollamaRunManyInputSchema.safeParse(args);
    const text = describeIssues(parsed.error!, args);
    expect(text).toContain('`jobs.1.model`: must be an Ollama model name');
    expect(text).toContain(', got "bad model"');
    expect(text).toContain('unknown argument `jobs.1.extra`');
    expect(text).toContain('`jobs.2.model` is required');
  });
});

describe('tools/list: what every session pays for', () => {
  it('lists input schemas without the bounds the server checks itself, and descriptions only on the arguments', async () => {
    const { tool } = probeTool();
    const client = await connected({
      ...tool,
      description: 'probe',
      inputSchema: z.strictObject({
        name: z
          .string()
          .min(1)
          .max(10)
          .regex(/^[a-z]+$/)
          .describe('A name.'),
        jobs: z
          .array(z.strictObject({ n: z.number().int().min(0).max(9).describe('nested') }))
          .max(3)
          .describe('Jobs.'),
      }),
      outputSchema: z.object({ ok: z.boolean().describe('not read by any model') }),
    });
    const [listed] = (await client.listTools()).tools;
    expect(listed!.inputSchema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'A name.' },
        jobs: {
          type: 'array',
          items: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
          description: 'Jobs.',
        },
      },
      required: ['name', 'jobs'],
      additionalProperties: false,
    });
    expect(listed!.outputSchema).toEqual({
      type: 'object',
      properties: { ok: { type: 'boolean' } },
      required: ['ok'],
      additionalProperties: false,
    });
  });

  it('spells nullable fields as anyOf with a null branch, never as a type array (portable to every client)', async () => {
    const { tool } = probeTool();
    const client = await connected({
      ...tool,
      outputSchema: z.object({
        ok: z.boolean(),
        task_id: z.string().nullable(),
        config: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      }),
    });
    const [listed] = (await client.listTools()).tools;
    expect(listed!.outputSchema).toEqual({
      type: 'object',
      properties: {
        ok: { type: 'boolean' },
        task_id: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        config: {
          type: 'object',
          additionalProperties: {
            anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }],
          },
        },
      },
      required: ['ok', 'task_id', 'config'],
      additionalProperties: false,
    });
  });

  it('lists listedInputSchema when a tool has one, and still checks calls against inputSchema', async () => {
    const { tool, calls } = probeTool();
    const client = await connected({
      ...tool,
      inputSchema: z.strictObject({ a: z.number() }),
      listedInputSchema: z.strictObject({ a: z.unknown() }),
    });
    expect((await client.listTools()).tools[0]!.inputSchema).toEqual({
      type: 'object',
      properties: { a: {} },
      required: ['a'],
      additionalProperties: false,
    });
    await client.callTool({ name: 'probe', arguments: { a: 'not a number' } });
    expect(calls[0]!.kind).toBe('invalid');
  });
});

describe('a tools/call with a task', () => {
  it('fails the task with the error when its job cannot start, rather than leave it working until it expires', async () => {
    const { tool } = probeTool();
    const failing: AnyToolDefinition = {
      ...tool,
      async startJob() {
        throw new Error('the state dir cannot be used');
      },
    };
    const server = new Server(
      { name: 's', version: '1' },
      {
        capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
        taskStore: new InMemoryTaskStore(),
      },
    );
    registerTools(server, [failing]);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'c', version: '1' });
    await client.connect(clientSide);
    const created = await client.request(
      { method: 'tools/call', params: { name: 'probe', arguments: {}, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    expect((await client.experimental.tasks.getTask(created.task.taskId)).status).toBe('failed');
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ text: 'Internal error in probe: the state dir cannot be used' }] });
  });
});
