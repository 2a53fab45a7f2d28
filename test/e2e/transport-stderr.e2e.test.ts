/**
 * Issue 20 §9 (transports): what a client sends reaches stderr only with its control characters
 * escaped. A line that is not JSON-RPC used to be echoed raw: `ESC ]52;c;...BEL` would set the
 * terminal's clipboard, `ESC [2J` clear the screen of whoever watches the server's log.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startRawServer, type RawStdioServer } from '../helpers/raw-stdio.js';
import { makeSandbox, serverEnv, startHttpServerChild, waitFor, type HttpServerChild } from './harness.js';

// Any C0 control but the newline ending each log line, DEL, any C1 control.
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('stderr of the stdio server', () => {
  let server: RawStdioServer | undefined;
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await server?.exited;
  });

  it('shows an invalid line with its control characters escaped, and answers it', async () => {
    server = startRawServer(serverEnv(makeSandbox()));
    await server.initialize();
    server.send('\u001b]52;c;cm0gLXJmIH4=\u0007\n');
    server.send('\u001b[2J\u001b[H{"jsonrpc":"2.0","id":5,"method":"ping"}\n');
    server.send('{"jsonrpc":"2.0","id":6,"method":"ping","\u009b31m":1}\n');
    await waitFor(() => (server!.stderr().match(/refused a message on stdin/g) ?? []).length >= 3, 10_000, 'three refusals');
    const stderr = server.stderr();
    expect(stderr).not.toMatch(RAW_CONTROL);
    expect(stderr).toContain('\\x1b]52;c;cm0gLXJmIH4=\\x07');
    expect(stderr).toContain('\\x1b[2J\\x1b[H');
    expect(stderr).toContain('\\x9b31m');
    // Each still gets its JSON-RPC error, and the server goes on.
    expect(server.replies().filter((reply) => reply.error?.code === -32700)).toHaveLength(2);
    expect((await server.reply(6)).error?.code).toBe(-32600);
  });
});

describe('stderr of the HTTP server', () => {
  let server: HttpServerChild | undefined;
  afterAll(async () => server?.stop());

  it('shows a refused Origin header with its C1 control characters escaped', async () => {
    server = await startHttpServerChild(makeSandbox());
    const url = new URL(server.url);
    // Header values are latin-1: a C1 CSI (0x9b) passes HTTP parsing, and JSON.stringify leaves it as it is.
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { ...server.auth, Origin: `http://evil\u009b2J.example:${url.port}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(403);
    await waitFor(() => server!.stderr().includes('refused a request with Origin'), 5_000, 'the refusal on stderr');
    expect(server.stderr()).not.toMatch(RAW_CONTROL);
    expect(server.stderr()).toContain('evil\\x9b2J.example');
  });
});
