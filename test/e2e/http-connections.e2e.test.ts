// Idle TCP connections to `--http`: no bytes, so no token and no Host check. Each holds a file
// descriptor; unbounded, anyone who can connect exhausted the server's, the next model process could
// not be started, and the server exited. They are bounded (in total, per address, to half the
// open-file limit) and closed when idle, while a real client still gets answers.
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { makeSandbox, startHttpServerChild, waitFor, type HttpServerChild } from './harness.js';

/** `count` connections from `localAddress` that send nothing; each is kept until the server closes it. */
async function silentSockets(server: HttpServerChild, count: number, localAddress: string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i += 1) {
    const socket = connect({ host: '127.0.0.1', port: server.port, localAddress });
    socket.on('error', () => {}); // a reset by the server
    sockets.push(socket);
  }
  onTestFinished(() => sockets.forEach((s) => s.destroy()));
  await waitFor(() => sockets.every((s) => !s.connecting), 10_000, 'the sockets to connect');
  return sockets;
}

const open = (sockets: readonly Socket[]) => sockets.filter((s) => !s.closed && !s.destroyed).length;

/** A real client: initialize, then one ollama_run. */
async function runOnce(server: HttpServerChild, prompt: string): Promise<RunReply> {
  const client = new Client({ name: 'real-client', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } }));
  try {
    const result = await client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt } });
    return result.structuredContent as unknown as RunReply;
  } finally {
    await client.close();
  }
}

// 127.0.0.2 is a second loopback address on Linux: a second remote address for the server.
const LINUX = process.platform === 'linux';

describe.skipIf(!LINUX)('idle connections to --http', () => {
  it('are bounded per address and in total, closed when idle, while a real client still gets answers', async () => {
    const server = await startHttpServerChild(makeSandbox(), {
      OLLAMA_MCP_HTTP_MAX_CONNECTIONS: '40',
      OLLAMA_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '20',
    });
    onTestFinished(() => server.stop());
    const other = await silentSockets(server, 300, '127.0.0.2');
    await waitFor(() => open(other) <= 20, 10_000, 'the server to close the sockets past the per-address cap');
    // The real client's own address, flooded too: its connection takes the place of a silent one.
    const same = await silentSockets(server, 300, '127.0.0.1');
    await waitFor(() => open(same) <= 20, 10_000, 'the server to close the sockets past the caps');
    expect(open(other) + open(same)).toBeLessThanOrEqual(40);

    expect((await runOnce(server, 'through the flood')).status).toBe('ok');

    // Silent sockets are closed once idle; nothing waits for their owner to give up.
    await waitFor(() => open(other) + open(same) === 0, 20_000, 'the idle sockets to be closed');
    expect(server.exitCode()).toBeNull();
    expect(server.stderr()).toMatch(
      /closed HTTP connections serving no request: .*\(limits: 40 waiting, 20 per address, 5 s without a request\)/,
    );
  });

  it.skipIf(spawnSync('prlimit', ['--version']).status !== 0)(
    'cannot take the descriptors a model process needs, even under a low open-file limit (the default caps)',
    async () => {
      const server = await startHttpServerChild(makeSandbox(), {}, [], ['prlimit', '--nofile=200:200']);
      onTestFinished(() => server.stop());
      const flood = await silentSockets(server, 500, '127.0.0.2');
      expect((await runOnce(server, 'while the flood is held')).status).toBe('ok');
      expect(server.exitCode()).toBeNull();
      // Past half the open-file limit, the oldest silent sockets were closed at once.
      await waitFor(() => open(flood) <= 100, 5_000, 'the sockets past half the open-file limit to be closed');
      expect(server.stderr()).toContain(
        'at most 100 HTTP connections serving no request (not 256): this process may open 200 files',
      );
    },
  );
});
