import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isAlive, makeSandbox, readRuns, readRunTrace, SERVER_ENTRY, serverEnv, startTestServer, waitFor } from './harness.js';
import { tempDir } from '../helpers/temp-dir.js';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** Start the server with raw pipes (no SDK client) so the test controls stdin and sees raw stdout. */
function rawServer(env: Record<string, string>) {
  const child = spawn(process.execPath, [SERVER_ENTRY], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
  return { child, send, exited, stdout: () => stdout, stderr: () => stderr };
}

/** Initialise a raw server and send one ollama_run call (id 2). */
function callRunRaw(server: ReturnType<typeof rawServer>, args: Record<string, unknown>): void {
  server.send(INIT);
  server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ollama_run', arguments: args } });
}

async function startHangingRun(sandbox: ReturnType<typeof makeSandbox>) {
  const server = rawServer(serverEnv(sandbox));
  callRunRaw(server, { model: 'llama3.2', prompt: 'forever @fake:hang', task_id: 'hang' });
  await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the model process to start');
  const pid = readRunTrace(sandbox).find((e) => e.event === 'start')!.pid;
  expect(isAlive(pid)).toBe(true);
  return { server, pid };
}

describe('process hygiene', () => {
  it('stdout carries only JSON-RPC messages', async () => {
    const sandbox = makeSandbox();
    const server = rawServer(serverEnv(sandbox));
    callRunRaw(server, { model: 'llama3.2', prompt: 'hi' });
    await waitFor(() => server.stdout().split('\n').filter(Boolean).length >= 2, 10_000, 'two responses');
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
    for (const line of server.stdout().split('\n').filter(Boolean)) {
      expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    }
  });

  it.each([
    ['stdin closes', (s: ReturnType<typeof rawServer>) => s.child.stdin.end()],
    ['SIGTERM', (s: ReturnType<typeof rawServer>) => s.child.kill('SIGTERM')],
    ['SIGINT', (s: ReturnType<typeof rawServer>) => s.child.kill('SIGINT')],
  ])('when %s, the server kills its model processes, logs them as cancelled and exits', async (_why, stop) => {
    const sandbox = makeSandbox();
    const { server, pid } = await startHangingRun(sandbox);
    stop(server);
    expect(await server.exited).toBe(0);
    expect(isAlive(pid)).toBe(false);
    const runs = readRuns(sandbox);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'cancelled', task_id: 'hang', escalate: false });
  });

  it('a cancelled attempt does not count against the task', async () => {
    const sandbox = makeSandbox();
    const { server } = await startHangingRun(sandbox);
    server.child.stdin.end();
    await server.exited;
    const next = await startTestServer({}, sandbox);
    const result = await next.run({ model: 'llama3.2', prompt: 'fine', task_id: 'hang' });
    expect(result.metadata.retry_count).toBe(0);
  });

  it('an invalid setting stops start-up with a message naming the variable', async () => {
    const sandbox = makeSandbox();
    const server = rawServer(serverEnv(sandbox, { OLLAMA_MCP_CONCURRENCY: '0' }));
    expect(await server.exited).toBe(2);
    expect(server.stderr()).toContain('OLLAMA_MCP_CONCURRENCY must be a whole number from 1 to 32, got `0`');
    expect(server.stdout()).toBe('');
  });
});

describe('start-up banner', () => {
  it('on a terminal, says on stderr (never stdout) how to connect a client', async () => {
    const { execa } = await import('execa');
    const { existsSync, readFileSync } = await import('node:fs');
    const pathModule = await import('node:path');
    if (!existsSync('/usr/bin/script')) throw new Error('this test needs util-linux `script` to give the server a terminal');
    const dir = tempDir('banner-');
    const errFile = pathModule.join(dir, 'stderr.txt');
    // `script` runs the server on a pseudo-terminal; stderr goes to a file, stdout stays on the terminal.
    const result = await execa(
      'script',
      ['-qec', `timeout --foreground 5 ${process.execPath} ${SERVER_ENTRY} 2>${errFile}`, '/dev/null'],
      {
        reject: false,
        env: serverEnv(makeSandbox()),
        stdin: 'ignore',
      },
    );
    const banner = readFileSync(errFile, 'utf8');
    expect(banner).toContain('is running on stdio');
    expect(banner).toContain('claude mcp add');
    expect(result.stdout).not.toContain('is running on stdio');
  });
});
