/**
 * Issue 8, "Also": arguments nested 100,000 deep used to end in "Maximum call stack size
 * exceeded" (a protocol error, or an internal error, and no runs.jsonl line), and an extra
 * `__proto__` argument to ollama_run was silently dropped and the run went ahead. Both must be a
 * plain invalid_input, over stdio and over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, serverEnv, spawnCount, useHttpServer, type Sandbox } from '../e2e/harness.js';
import { startRawServer, toolCall, type JsonRpcLine, type RawStdioServer } from '../helpers/raw-stdio.js';

const DEPTH = 100_000;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A tools/call line with `argumentsJson` spliced in verbatim (JSON.stringify could not build these). */
const rawCall = (id: number, tool: string, argumentsJson: string) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":${argumentsJson}}}\n`;

interface ToolReply {
  readonly isError?: boolean;
  readonly content: { text: string }[];
  readonly structuredContent?: { status?: string };
}

function toolReply(line: JsonRpcLine): ToolReply {
  if (!line.result) throw new Error(`expected a tool result, got ${JSON.stringify(line).slice(0, 300)}`);
  return line.result as unknown as ToolReply;
}

/** The hostile calls, each with the text its refusal must contain. */
const HOSTILE: [name: string, tool: string, argumentsJson: string, expected: string][] = [
  [
    'a format schema nested 100,000 deep',
    'ollama_run',
    `{"model":"llama3.2","prompt":"hi","format":${nestedObjects(DEPTH)}}`,
    '`format`: nested deeper than 100 levels',
  ],
  [
    'a prompt nested 100,000 deep',
    'ollama_run',
    `{"model":"llama3.2","prompt":${nestedArrays(DEPTH)}}`,
    '`prompt`: nested deeper than 100 levels',
  ],
  [
    'an unknown argument nested 100,000 deep',
    'ollama_run',
    `{"model":"llama3.2","prompt":"hi","extra":${nestedObjects(DEPTH)}}`,
    '`extra`: nested deeper',
  ],
  ['jobs nested 100,000 deep', 'ollama_run_many', `{"jobs":${nestedArrays(DEPTH)}}`, '`jobs`: nested deeper than 100 levels'],
  [
    'a job format nested 100,000 deep',
    'ollama_run_many',
    `{"jobs":[{"model":"llama3.2","prompt":"hi","format":${nestedObjects(DEPTH)}}]}`,
    '`jobs`: nested deeper',
  ],
  [
    'an extra __proto__ argument',
    'ollama_run',
    '{"model":"llama3.2","prompt":"hi","__proto__":{"model":"x"}}',
    'unknown argument `__proto__`',
  ],
  [
    'an extra __proto__ in a job',
    'ollama_run_many',
    '{"jobs":[{"model":"llama3.2","prompt":"hi","__proto__":{}}]}',
    'unknown argument `jobs.0.__proto__`',
  ],
  [
    'an extra __proto__ in a batch call',
    'ollama_run_many',
    '{"jobs":[{"model":"llama3.2","prompt":"hi"}],"__proto__":1}',
    'unknown argument `__proto__`',
  ],
];

describe('hostile arguments over stdio', () => {
  let sandbox: Sandbox;
  let server: RawStdioServer;
  let nextId = 1;
  beforeAll(async () => {
    sandbox = makeSandbox();
    server = startRawServer(serverEnv(sandbox, { OLLAMA_MCP_RUNS_SUMMARY_TOOL: '1' }));
    await server.initialize();
  });
  afterAll(async () => {
    server.child.stdin.end();
    await server.exited;
  });

  it.each(HOSTILE)('%s gets invalid_input and a runs.jsonl line, and spawns nothing', async (_name, tool, args, expected) => {
    const linesBefore = readRuns(sandbox).length;
    const id = nextId++;
    server.send(rawCall(id, tool, args));
    const reply = toolReply(await server.reply(id));
    expect(reply.isError).toBe(true);
    expect(reply.content[0]!.text).toContain('REJECTED (invalid_input), nothing was run.');
    expect(reply.content[0]!.text).toContain(expected);
    expect(reply.content[0]!.text).not.toMatch(/call stack/i);
    expect(spawnCount(sandbox)).toBe(0);
    const runs = readRuns(sandbox);
    expect(runs).toHaveLength(linesBefore + 1);
    expect(runs.at(-1)).toMatchObject({ tool, status: 'invalid_input' });
  });

  it.each([
    ['ollama_task_status', '{"task_id":"t1","__proto__":{}}'],
    ['ollama_reset', '{"task_id":"t1","__proto__":{}}'],
    ['ollama_health', '{"__proto__":{}}'],
    ['ollama_runs_summary', '{"__proto__":{}}'],
  ])('%s refuses an extra __proto__ argument like any unknown argument', async (tool, args) => {
    const id = nextId++;
    server.send(rawCall(id, tool, args));
    const reply = toolReply(await server.reply(id));
    expect(reply.isError).toBe(true);
    expect(reply.content[0]!.text).toContain('unknown argument `__proto__`');
  });

  it('still serves normal calls afterwards', async () => {
    server.send(toolCall(999, 'ollama_run', { model: 'llama3.2', prompt: 'fine' }));
    expect(toolReply(await server.reply(999)).structuredContent?.status).toBe('ok');
  });
});

describe('hostile arguments over HTTP', () => {
  const server = useHttpServer();
  let url: string;
  let sessionId: string;
  beforeAll(async () => {
    url = server.url;
    const init = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    );
    sessionId = init.headers.get('mcp-session-id')!;
    await post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  });

  async function post(body: string): Promise<Response> {
    return fetch(url, {
      method: 'POST',
      headers: {
        ...server.auth,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...(sessionId ? { 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': '2025-06-18' } : {}),
      },
      body,
    });
  }

  /** The JSON-RPC reply inside the SSE response. */
  async function call(body: string): Promise<JsonRpcLine> {
    const text = await (await post(body)).text();
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as JsonRpcLine)
      .find((message) => 'result' in message || 'error' in message);
    if (!data) throw new Error(`no JSON-RPC reply in ${text.slice(0, 300)}`);
    return data;
  }

  it.each([
    [
      'params that are not an object',
      '{"jsonrpc":"2.0","id":3,"method":"ping","params":[1]}',
      3,
      -32600,
      '"params" must be an object',
    ],
    ['an unexpected member', '{"jsonrpc":"2.0","id":"x","method":"ping","extra":1}', 'x', -32600, 'unexpected member "extra"'],
    ['an object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', null, -32600, '"id" must be a string or an integer'],
    ['an empty batch', '[]', null, -32600, 'an empty batch'],
    ['invalid JSON', '{nope', null, -32700, 'not valid JSON'],
  ])('%s gets a 400 saying what is wrong, with the id when it can be read', async (_name, body, id, code, message) => {
    const response = await post(body);
    expect(response.status).toBe(400);
    const reply = (await response.json()) as JsonRpcLine;
    expect(reply.id).toBe(id);
    expect(reply.error?.code).toBe(code);
    expect(reply.error?.message).toContain(message);
  });

  it.each(HOSTILE)('%s gets invalid_input and a runs.jsonl line', async (_name, tool, args, expected) => {
    const linesBefore = readRuns(server.sandbox).length;
    const reply = toolReply(await call(rawCall(7, tool, args).trim()));
    expect(reply.isError).toBe(true);
    expect(reply.content[0]!.text).toContain(expected);
    expect(spawnCount(server.sandbox)).toBe(0);
    expect(readRuns(server.sandbox)).toHaveLength(linesBefore + 1);
  });
});
