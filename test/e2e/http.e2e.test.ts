import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../../src/config/config.js';
import { isLoopbackHost } from '../../src/transport/http/guards.js';
import { startHttpServer, type RunningHttpServer } from '../../src/transport/http/server.js';
import { HttpServerError } from '../../src/transport/http/errors.js';
import { createApp, createMcpServer, type App } from '../../src/mcp/server.js';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { makeSandbox, readTrace, ROOT, serverEnv, useHttpServer, waitFor, type Sandbox } from './harness.js';

const CONFORMANCE_BIN = path.join(ROOT, 'node_modules/.bin/conformance');
const TOKEN = 'test-token-0123456789abcdef';
const execFileAsync = promisify(execFile);

// ---------------------------------------------------------------------------------------------
// Helpers: raw HTTP requests (any Host header), an SDK client.

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One HTTP request with exactly these headers (fetch will not let us forge Host). Reads the whole body. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: options.method ?? 'POST',
        headers: options.headers ?? {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-e2e', version: '1.0.0' } },
});

/** Headers of a well-formed initialize POST to `url`, plus overrides. */
function initHeaders(url: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    Host: new URL(url).host,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...extra,
  };
}

function rawInitialize(url: string, extra: Record<string, string> = {}): Promise<RawResponse> {
  return raw(url, { headers: initHeaders(url, extra), body: INITIALIZE });
}

async function connectClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'http-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

function jsonRpcError(body: string): { code: number; message: string } {
  return (JSON.parse(body) as { error: { code: number; message: string } }).error;
}

// ---------------------------------------------------------------------------------------------

describe('Streamable HTTP transport (the built server as a child process, with its default bearer token)', () => {
  const server = useHttpServer({ OLLAMA_MCP_PROGRESS_INTERVAL_MS: '200' });

  it('listens on 127.0.0.1 by default and says so on stderr', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  });

  it('lists the tools and runs ollama_run through the SDK client', async () => {
    const client = await connectClient(server.url, server.auth);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('ollama_run');
      const result = await client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'hi' } });
      expect(result.isError).toBe(false);
      const structured = result.structuredContent as unknown as RunReply;
      expect(structured.status).toBe('ok');
      expect(structured.output).toBe('fake answer from llama3.2: hi');
    } finally {
      await client.close();
    }
  });

  it('streams progress notifications over the session (SSE, never plain JSON responses)', async () => {
    const client = await connectClient(server.url, server.auth);
    try {
      const notes: { progress: number; message?: string }[] = [];
      const result = await client.callTool(
        { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'x @fake:sleep_ms=1500' } },
        undefined,
        { onprogress: (p) => notes.push(p), timeout: 20_000 },
      );
      expect(result.isError).toBe(false);
      expect(notes.length).toBeGreaterThanOrEqual(3); // a 1.5 s run with a 200 ms heartbeat
      for (let i = 1; i < notes.length; i += 1) expect(notes[i]!.progress).toBeGreaterThan(notes[i - 1]!.progress);
    } finally {
      await client.close();
    }
  });

  it('ends a session on DELETE; the session id is then unknown (404)', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } });
    const client = new Client({ name: 'http-e2e', version: '1.0.0' });
    await client.connect(transport);
    const sessionId = transport.sessionId!;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    await transport.terminateSession();
    await client.close();
    const after = await raw(server.url, {
      headers: initHeaders(server.url, { ...server.auth, 'Mcp-Session-Id': sessionId }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
    });
    expect(after.status).toBe(404);
    expect(jsonRpcError(after.body).code).toBe(-32001);
  });

  describe('DNS rebinding protection', () => {
    it('refuses a Host header that is not this server (403, JSON-RPC error body)', async () => {
      const response = await rawInitialize(server.url, { ...server.auth, Host: 'evil.example.com' });
      expect(response.status).toBe(403);
      expect(response.headers['content-type']).toMatch(/application\/json/);
      expect(jsonRpcError(response.body)).toMatchObject({ code: -32000, message: expect.stringMatching(/Host/) });
    });

    it('refuses the right host name on another port', async () => {
      const response = await rawInitialize(server.url, { ...server.auth, Host: `127.0.0.1:${server.port + 1}` });
      expect(response.status).toBe(403);
    });

    it('refuses a foreign Origin even with a good Host (403)', async () => {
      for (const origin of [
        'http://evil.example.com',
        `http://evil.example.com:${server.port}`,
        'null',
        `https://localhost:${server.port}`,
      ]) {
        const response = await rawInitialize(server.url, { ...server.auth, Origin: origin });
        expect(response.status, origin).toBe(403);
        expect(jsonRpcError(response.body).message).toMatch(/Origin/);
      }
    });

    it('accepts the loopback names for Host and Origin', async () => {
      for (const name of ['localhost', '127.0.0.1', '[::1]']) {
        const response = await rawInitialize(server.url, {
          ...server.auth,
          Host: `${name}:${server.port}`,
          Origin: `http://${name}:${server.port}`,
        });
        expect(response.status, name).toBe(200);
        expect(response.headers['mcp-session-id']).toBeTruthy();
        expect(response.headers['content-type']).toMatch(/text\/event-stream/);
      }
    });
  });

  describe('HTTP-level errors', () => {
    it('answers 404 off the /mcp path, 405 for other methods, 400 for a request without a session', async () => {
      const host = { ...server.auth, Host: new URL(server.url).host };
      expect((await raw(server.url.replace(/\/mcp$/, '/other'), { method: 'GET', headers: host })).status).toBe(404);
      const put = await raw(server.url, { method: 'PUT', headers: host });
      expect(put.status).toBe(405);
      expect(put.headers.allow).toBe('GET, POST, DELETE');
      expect((await raw(server.url, { method: 'GET', headers: { ...host, Accept: 'text/event-stream' } })).status).toBe(400);
      const notInit = await raw(server.url, {
        headers: initHeaders(server.url, server.auth),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(notInit.status).toBe(400);
      const badJson = await raw(server.url, { headers: initHeaders(server.url, server.auth), body: '{not json' });
      expect(badJson.status).toBe(400);
      expect(jsonRpcError(badJson.body).code).toBe(-32700);
    });

    it('refuses a body declared larger than the limit (32 MiB) with 413 without reading it', async () => {
      const target = new URL(server.url);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: initHeaders(server.url, { ...server.auth, 'Content-Length': String(33 * 1024 * 1024) }),
        });
        req.on('response', (res) => {
          resolve(res.statusCode ?? 0);
          req.destroy();
        });
        req.on('error', reject);
        req.write('{"jsonrpc":"2.0",'); // the rest never comes: the answer must not wait for it
      });
      expect(status).toBe(413);
    });
  });
});

// The conformance suite cannot send a bearer token: it runs against a server with the check off, on loopback.
describe('Streamable HTTP transport with OLLAMA_MCP_HTTP_AUTH=none', () => {
  const server = useHttpServer({ OLLAMA_MCP_HTTP_AUTH: 'none' });

  it('serves without a token and says so on stderr, with the command to connect', async () => {
    expect((await rawInitialize(server.url)).status).toBe(200);
    expect(server.stderr()).toContain(`listening on ${server.url} (no authentication)`);
    expect(server.stderr()).toMatch(/no authentication \(OLLAMA_MCP_HTTP_AUTH=none\): every local user/);
    expect(server.stderr()).toContain(`\n  claude mcp add --transport http ollama-runner ${server.url}\n`);
  });

  describe('conformance suite (@modelcontextprotocol/conformance, offline from node_modules)', () => {
    const scenarios = ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection'];

    it.for(scenarios)('%s', async (scenario) => {
      const run = await execFileAsync(CONFORMANCE_BIN, ['server', '--url', server.url, '--scenario', scenario], {
        cwd: ROOT,
        timeout: 20_000,
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      }).then(
        (done) => ({ code: 0, out: done.stdout + done.stderr }),
        (error: { code?: number; stdout?: string; stderr?: string }) => ({
          code: error.code ?? -1,
          out: `${error.stdout}${error.stderr}`,
        }),
      );
      // eslint-disable-next-line no-control-regex
      const output = run.out.replace(/\u001b\[[0-9;]*m/g, '');
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(output);
      expect(summary, output).not.toBeNull();
      expect({ code: run.code, failed: summary![3], passed: summary![1] }, output).toEqual({
        code: 0,
        failed: '0',
        passed: summary![2],
      });
    });
  });
});

describe('Streamable HTTP transport with OLLAMA_MCP_HTTP_TOKEN', () => {
  const server = useHttpServer({ OLLAMA_MCP_HTTP_TOKEN: TOKEN });

  it('answers 401 with WWW-Authenticate: Bearer when the token is missing or wrong', async () => {
    const missing = await rawInitialize(server.url);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(jsonRpcError(missing.body).code).toBe(-32000);
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN]) {
      const wrong = await rawInitialize(server.url, { Authorization: authorization });
      expect(wrong.status, authorization).toBe(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it('accepts the right token (200), and the SDK client works with it', async () => {
    const right = await rawInitialize(server.url, { Authorization: `Bearer ${TOKEN}` });
    expect(right.status).toBe(200);
    const client = await connectClient(server.url, { Authorization: `Bearer ${TOKEN}` });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('ollama_run');
    } finally {
      await client.close();
    }
  });

  it('still checks Host before the token', async () => {
    const response = await rawInitialize(server.url, { Host: 'evil.example.com', Authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(403);
  });

  it('names the variable in a 401, never its value; keeps no token file; shows the command with the variable', async () => {
    const refused = jsonRpcError((await rawInitialize(server.url)).body).message;
    expect(refused).toBe(
      'Unauthorized: send the header Authorization: Bearer <token>. The token is the value of OLLAMA_MCP_HTTP_TOKEN the server was started with.',
    );
    expect(existsSync(path.join(server.sandbox.telemetryDir, 'http-token'))).toBe(false);
    expect(server.stderr()).toContain(
      `\n  claude mcp add --transport http ollama-runner ${server.url} --header "Authorization: Bearer $OLLAMA_MCP_HTTP_TOKEN"\n`,
    );
    expect(server.stderr()).not.toContain(TOKEN);
  });
});

describe('startHttpServer in process', () => {
  let sandbox: Sandbox;
  let app: App;
  const started: RunningHttpServer[] = [];
  const logs: string[] = [];
  const start = async (options: Partial<Parameters<typeof startHttpServer>[0]> = {}) => {
    const http = await startHttpServer({
      app,
      createServer: createMcpServer,
      auth: { kind: 'none' },
      log: (m) => logs.push(m),
      ...options,
    });
    started.push(http);
    return http;
  };
  beforeAll(async () => {
    sandbox = makeSandbox();
    // The run service hands the fake CLI a copy of process.env taken now: give it the sandbox's trace dirs.
    const env = serverEnv(sandbox);
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      app = await createApp(loadConfig(env), () => {});
      await app.services(); // the run service is built on first use: build it while process.env is the sandbox's
    } finally {
      for (const key of Object.keys(env)) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
    }
  });
  afterAll(async () => {
    await Promise.all(started.map((http) => http.close()));
    const { runs, log } = await app.services();
    runs.abortAll();
    await runs.drain();
    await log.idle();
  });

  it('knows which bind addresses are loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com']) expect(isLoopbackHost(host), host).toBe(false);
  });

  it('refuses to listen on a non-loopback host without authentication', async () => {
    const attempt = startHttpServer({ app, createServer: createMcpServer, host: '0.0.0.0', auth: { kind: 'none' } });
    await expect(attempt).rejects.toBeInstanceOf(HttpServerError);
    await expect(attempt).rejects.toMatchObject({
      kind: 'http_config_error',
      variable: 'OLLAMA_MCP_HTTP_AUTH',
      message:
        'refusing to listen on 0.0.0.0 without authentication (OLLAMA_MCP_HTTP_AUTH=none): anyone on the network could run models; unset OLLAMA_MCP_HTTP_AUTH to require a bearer token',
    });
  });

  it('listens on 0.0.0.0 with a token, and still checks Host', async () => {
    const http = await start({ host: '0.0.0.0', auth: { kind: 'bearer', token: TOKEN, hint: 'Ask the owner.' } });
    const url = `http://127.0.0.1:${http.port}/mcp`;
    expect((await rawInitialize(url, { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await rawInitialize(url)).status).toBe(401);
    expect((await rawInitialize(url, { Host: `evil.example.com:${http.port}`, Authorization: `Bearer ${TOKEN}` })).status).toBe(
      403,
    );
  });

  it('reports a port in use as a listen_error', async () => {
    const first = await start();
    const second = startHttpServer({ app, createServer: createMcpServer, port: first.port, auth: { kind: 'none' } });
    await expect(second).rejects.toMatchObject({
      kind: 'listen_error',
      message: expect.stringMatching(/already in use/),
    });
  });

  it('with every session idle, a new one makes room at once: the idle session used longest ago gives way (404 after)', async () => {
    const http = await start({ maxSessions: 2 });
    const first = await rawInitialize(http.url);
    const second = await rawInitialize(http.url);
    const third = await rawInitialize(http.url);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(http.sessionCount()).toBe(2);
    const ping = (response: RawResponse) =>
      raw(http.url, {
        headers: initHeaders(http.url, { 'Mcp-Session-Id': String(response.headers['mcp-session-id']) }),
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
      });
    expect((await ping(first)).status).toBe(404);
    expect((await ping(second)).status).toBe(200);
    expect(logs.some((line) => line.includes(`session ${String(first.headers['mcp-session-id'])} closed (evicted:`))).toBe(true);
  });

  it('frees a slot on DELETE', async () => {
    const http = await start({ maxSessions: 2 });
    const first = await rawInitialize(http.url);
    expect((await rawInitialize(http.url)).status).toBe(200);
    const deleted = await raw(http.url, {
      method: 'DELETE',
      headers: { Host: new URL(http.url).host, 'Mcp-Session-Id': String(first.headers['mcp-session-id']) },
    });
    expect(deleted.status).toBe(200);
    expect(http.sessionCount()).toBe(1);
  });

  it('refuses a streamed (chunked) body past the limit with 413', async () => {
    const http = await start({ maxBodyBytes: 1024 });
    const target = new URL(http.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: initHeaders(http.url),
      });
      req.on('response', (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      });
      req.on('error', reject);
      req.end(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(4096)}"}}`);
    });
    expect(status).toBe(413);
  });

  it('closes sessions left idle', async () => {
    const http = await start({ sessionIdleMs: 500 });
    expect((await rawInitialize(http.url)).status).toBe(200);
    expect(http.sessionCount()).toBe(1);
    await waitFor(() => http.sessionCount() === 0, 5_000, 'the idle session to be closed');
    expect(logs.some((line) => /closed \(idle for/.test(line))).toBe(true);
  });

  it('close() ends every session and aborts its in-flight calls (the model process is killed)', async () => {
    const http = await start();
    const client = await connectClient(http.url);
    const call = client.callTool(
      { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'long @fake:sleep_ms=20000' } },
      undefined,
      {
        timeout: 25_000,
      },
    );
    call.catch(() => {});
    await waitFor(
      () => readTrace(sandbox).some((e) => e.event === 'start' && e.argv?.includes('llama3.2')),
      10_000,
      'the fake model to start',
    );
    const pid = readTrace(sandbox).find((e) => e.event === 'start')!.pid;
    await http.close();
    expect(http.sessionCount()).toBe(0);
    await waitFor(() => readTrace(sandbox).some((e) => e.event === 'exit' && e.pid === pid), 10_000, 'the fake model to exit');
    await client.close().catch(() => {});
    // The listener is gone.
    await expect(rawInitialize(http.url)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('never closes a session with a call in flight for room: the idle one goes, and with all busy a new one gets 503', async () => {
    const startsBefore = readTrace(sandbox).filter((e) => e.event === 'start').length;
    const modelStarts = () => readTrace(sandbox).filter((e) => e.event === 'start').length - startsBefore;
    const longCall = (client: Client) => {
      const call = client.callTool(
        { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'busy @fake:sleep_ms=20000' } },
        undefined,
        { timeout: 25_000 },
      );
      call.catch(() => {});
    };

    const http = await start({ maxSessions: 2 });
    const busy = await connectClient(http.url);
    try {
      longCall(busy);
      await waitFor(() => modelStarts() >= 1, 10_000, "the busy session's model to start");
      // The other session is used after the busy one and listens on a GET stream, as the busy one
      // does: only the call in flight keeps the busy one from being the one to go.
      const idle = await rawInitialize(http.url);
      const idleId = String(idle.headers['mcp-session-id']);
      const stream = httpRequest({
        host: '127.0.0.1',
        port: http.port,
        path: '/mcp',
        method: 'GET',
        headers: { Host: new URL(http.url).host, Accept: 'text/event-stream', 'Mcp-Session-Id': idleId },
      });
      stream.on('error', () => {});
      stream.on('response', (res) => res.resume());
      stream.end();
      await new Promise((resolve) => stream.once('response', resolve));

      expect((await rawInitialize(http.url)).status).toBe(200);
      expect(logs.some((line) => line.includes(`session ${idleId} closed (evicted:`))).toBe(true);
      expect((await busy.listTools()).tools.length).toBeGreaterThan(0); // the busy session is still there
      expect(readTrace(sandbox).filter((e) => e.event === 'exit').length).toBeLessThan(
        readTrace(sandbox).filter((e) => e.event === 'start').length,
      ); // and its model still runs
    } finally {
      await busy.close();
    }

    const single = await start({ maxSessions: 1 });
    const only = await connectClient(single.url);
    try {
      longCall(only);
      await waitFor(() => modelStarts() >= 2, 10_000, "the only session's model to start");
      const refused = await rawInitialize(single.url);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBeTruthy();
      expect(jsonRpcError(refused.body).message).toBe(
        'Service unavailable: all 1 MCP sessions (the limit) have a call in flight. Retry when one ends.',
      );
    } finally {
      await only.close();
    }
  }, 40_000);
});
