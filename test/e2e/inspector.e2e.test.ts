import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { makeSandbox, ROOT, SERVER_ENTRY, serverEnv, useHttpServer, type Sandbox } from './harness.js';

// Smoke tests with a real MCP client: the MCP Inspector's CLI mode (@modelcontextprotocol/inspector-cli 1.0.3).
/** `tools/call ollama_run` with model llama3.2 and prompt "hi", as Inspector CLI arguments. */
const CALL_OLLAMA_RUN_HI = [
  '--method',
  'tools/call',
  '--tool-name',
  'ollama_run',
  '--tool-arg',
  'model=llama3.2',
  '--tool-arg',
  'prompt=hi',
];
const INSPECTOR_BIN = path.join(ROOT, 'node_modules/.bin/mcp-inspector-cli');
// inspector-cli 1.0.3 finds its own package.json with `existsSync("../package.json")`, relative to the
// *working directory*, and otherwise imports a path that does not exist ("Cannot find module
// .../@modelcontextprotocol/package.json"). Running it from its build/ directory satisfies the check.
const INSPECTOR_CWD = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector-cli/build');
const execFileAsync = promisify(execFile);

interface InspectorRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run the inspector CLI with only PATH and HOME in its environment: the server's settings go in `-e`. */
async function inspector(args: readonly string[]): Promise<InspectorRun> {
  return execFileAsync(INSPECTOR_BIN, ['--cli', ...args], {
    cwd: INSPECTOR_CWD,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    timeout: 20_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? -1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
}

/** `-e KEY=VALUE` for every setting the stdio server needs (the fake CLI, the sandbox). */
function envFlags(sandbox: Sandbox): string[] {
  const { PATH: _path, HOME: _home, ...settings } = serverEnv(sandbox);
  return Object.entries(settings).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
}

function parse<T>(run: InspectorRun): T {
  expect(run.code, `inspector failed:\n${run.stderr}\n${run.stdout}`).toBe(0);
  return JSON.parse(run.stdout) as T;
}

interface ToolsList {
  tools: { name: string; inputSchema: unknown }[];
}
interface ToolCall {
  content: { type: string; text: string }[];
  structuredContent?: unknown;
  isError?: boolean;
}

describe('MCP Inspector CLI over stdio (node dist/cli.js)', () => {
  let sandbox: Sandbox;
  let toolNames: string[] = [];
  const stdio = () => [...envFlags(sandbox), process.execPath, SERVER_ENTRY];

  beforeAll(async () => {
    if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`);
    sandbox = makeSandbox();
    const list = parse<ToolsList>(await inspector([...stdio(), '--method', 'tools/list']));
    toolNames = list.tools.map((tool) => tool.name);
  });

  it('tools/list lists ollama_run with its input schema', () => {
    expect(toolNames).toContain('ollama_run');
  });

  it('tools/call ollama_run returns the fake answer, passing the settings given with -e', async () => {
    const result = parse<ToolCall>(await inspector([...stdio(), ...CALL_OLLAMA_RUN_HI]));
    expect(result.isError).toBe(false);
    const structured = result.structuredContent as RunReply;
    expect(structured.output).toBe('fake answer from llama3.2: hi');
    expect(structured.status).toBe('ok');
    expect(result.content[0]?.text).toContain('fake answer from llama3.2: hi');
    expect(existsSync(path.join(sandbox.telemetryDir, 'runs.jsonl'))).toBe(true); // OLLAMA_MCP_TELEMETRY_DIR arrived
  });

  it('tools/call ollama_health answers', async () => {
    expect(toolNames).toContain('ollama_health');
    const result = parse<ToolCall>(await inspector([...stdio(), '--method', 'tools/call', '--tool-name', 'ollama_health']));
    expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
    expect(result.content.length).toBeGreaterThan(0);
    expect(typeof (result.structuredContent as { ok?: unknown } | undefined)?.ok).toBe('boolean');
  });

  it('an unknown tool comes back as an error result (the inspector still exits 0)', async () => {
    const result = parse<ToolCall>(await inspector([...stdio(), '--method', 'tools/call', '--tool-name', 'no_such_tool']));
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(/Unknown tool/);
  });
});

describe('MCP Inspector CLI over Streamable HTTP (dist/cli.js --http)', () => {
  const server = useHttpServer();
  let target: string[] = [];
  beforeAll(() => {
    target = [server.url, '--header', `Authorization: Bearer ${server.token}`];
  });

  it('tools/list and tools/call work against the /mcp URL, with the bearer token the server keeps', async () => {
    expect(parse<ToolsList>(await inspector([...target, '--method', 'tools/list'])).tools.map((t) => t.name)).toContain(
      'ollama_run',
    );
    const result = parse<ToolCall>(await inspector([...target, ...CALL_OLLAMA_RUN_HI]));
    expect((result.structuredContent as RunReply).output).toBe('fake answer from llama3.2: hi');
  });
});
