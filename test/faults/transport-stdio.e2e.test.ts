/**
 * Issue 8, item 1: a message over the stdio limit used to end the server silently (exit 0,
 * nothing on stderr, in-flight runs cancelled). Now every valid call fits, an oversized or invalid
 * message gets a JSON-RPC error while the server keeps serving, and a broken connection is
 * logged and exits non-zero.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeSandbox, readRuns, readRunTrace, serverEnv, startTestServer, waitFor, type Sandbox } from '../e2e/harness.js';
import { MAX_MESSAGE_BYTES } from '../../src/transport/message-limits.js';
import { startRawServer, toolCall, type RawStdioServer } from '../helpers/raw-stdio.js';

const running: RawStdioServer[] = [];
function rawServer(sandbox: Sandbox): RawStdioServer {
  const server = startRawServer(serverEnv(sandbox));
  running.push(server);
  return server;
}
afterEach(async () => {
  for (const server of running.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
  }
});

const MiB = 1024 * 1024;

describe('stdio message limits', () => {
  it('ollama_run_many with 12 jobs of 1,000,000 characters is refused with a clear error; the server keeps serving', async () => {
    const server = await startTestServer();
    const jobs = Array.from({ length: 12 }, (_, i) => ({
      model: 'llama3.2',
      prompt: `${String.fromCharCode(65 + i)}${'x'.repeat(999_999)}`,
    }));
    const result = await server.client.callTool({ name: 'ollama_run_many', arguments: { jobs } });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(text).toContain('REJECTED (invalid_input), nothing was run.');
    expect(text).toContain('must total at most 3000000 characters (split the jobs into several calls), got 12000000');
    expect(readRunTrace(server.sandbox)).toEqual([]);
    expect(readRuns(server.sandbox).at(-1)).toMatchObject({ tool: 'ollama_run_many', status: 'invalid_input' });
    expect((await server.run({ model: 'llama3.2', prompt: 'still there?' })).metadata.status).toBe('ok');
  });

  it('the largest batch the schema allows (3 jobs of 1,000,000 characters) runs', async () => {
    const server = await startTestServer();
    const jobs = Array.from({ length: 3 }, (_, i) => ({
      model: 'llama3.2',
      prompt: `${String.fromCharCode(65 + i)}${'y'.repeat(999_999)}`,
    }));
    const result = await server.client.callTool({ name: 'ollama_run_many', arguments: { jobs } }, undefined, {
      timeout: 50_000,
    });
    const summary = (result.structuredContent as { summary: { ok: number } }).summary;
    expect(summary.ok).toBe(3);
  });

  it('a 20 MiB garbage line gets a parse error (-32700) and the server answers the next message', async () => {
    const server = rawServer(makeSandbox());
    await server.initialize();
    server.send(`${'x'.repeat(20 * MiB)}\n`);
    server.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    expect(await server.reply('after')).toMatchObject({ result: {} });
    expect(server.replies().find((line) => line.id === null)).toMatchObject({ error: { code: -32700 } });
    expect(server.child.exitCode).toBeNull();
  });

  it('a message over the limit gets -32600 naming the limit, with its id; a run in flight finishes normally', async () => {
    const sandbox = makeSandbox();
    const server = rawServer(sandbox);
    await server.initialize();
    server.send(toolCall(1, 'ollama_run', { model: 'llama3.2', prompt: 'slow @fake:sleep_ms=2500', task_id: 'in-flight' }));
    await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the run to start');
    const oversized = JSON.stringify(toolCall(2, 'ollama_run', { model: 'llama3.2', prompt: 'z'.repeat(MAX_MESSAGE_BYTES) }));
    server.send(`${oversized}\n`);
    const refused = await server.reply(2);
    expect(refused.error?.code).toBe(-32600);
    expect(refused.error?.message).toContain(`the message is ${Buffer.byteLength(oversized)} bytes`);
    expect(refused.error?.message).toContain('over the limit of 33554432 bytes (32 MiB)');
    expect(server.stderr()).toContain('refused a message on stdin: Request too large');
    const done = await server.reply(1);
    expect((done.result?.structuredContent as { status: string }).status).toBe('ok');
    server.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    expect(await server.reply(3)).toMatchObject({ result: {} });
    expect(readRuns(sandbox).map((run) => run.status)).toEqual(['ok']);
  });

  it('answers messages the SDK would drop unanswered: batches, bad ids, params that are not an object', async () => {
    const server = rawServer(makeSandbox());
    await server.initialize();
    server.send('[{"jsonrpc":"2.0","id":10,"method":"ping"}]\n');
    server.send('{"jsonrpc":"2.0","id":{"n":11},"method":"ping"}\n');
    server.send('{"jsonrpc":"2.0","id":12,"method":"tools/list","params":[1]}\n');
    server.send('{"jsonrpc":"2.0","id":13,"method":"ping"}\n');
    await server.reply(13);
    const lines = server.replies();
    expect(lines).toContainEqual([expect.objectContaining({ id: 10, error: expect.objectContaining({ code: -32600 }) })]);
    expect(lines).toContainEqual(expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) }));
    expect(lines).toContainEqual(
      expect.objectContaining({ id: 12, error: { code: -32600, message: 'Invalid Request: "params" must be an object' } }),
    );
  });
});

describe('an unexpected close of the connection', () => {
  it('is said on stderr and exits non-zero; the run in flight is cancelled and logged', async () => {
    const sandbox = makeSandbox();
    const server = rawServer(sandbox);
    await server.initialize();
    server.send(toolCall(1, 'ollama_run', { model: 'llama3.2', prompt: 'forever @fake:hang', task_id: 'cut-off' }));
    await waitFor(() => readRunTrace(sandbox).some((e) => e.event === 'start'), 10_000, 'the run to start');
    // The client stops reading: the server's next write fails with EPIPE while stdin stays open.
    server.child.stdout.destroy();
    server.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toMatch(/the stdio connection closed unexpectedly: cannot write to stdout: .*EPIPE/);
    const exit = readRunTrace(sandbox).find((e) => e.event === 'exit');
    expect(exit).toBeDefined();
    expect(readRuns(sandbox)).toEqual([expect.objectContaining({ task_id: 'cut-off', status: 'cancelled' })]);
  });

  it('stdin reaching its end is still a normal exit (0)', async () => {
    const server = rawServer(makeSandbox());
    await server.initialize();
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
    expect(server.stderr()).not.toContain('unexpectedly');
  });
});
