/**
 * Issue 20 §4, through the built server: a client that goes away mid-call cancels the call (the
 * model process is killed, the run logged `cancelled`, its slot freed), and sessions clients
 * never closed do not lock a new client out.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { isAlive, readRuns, readRunTrace, useHttpServer, waitFor, type HttpServerChild } from './harness.js';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sessions-e2e', version: '1' } },
};

/** POST one JSON-RPC message; the request and the response (headers read, body streaming) are the caller's. */
function post(
  server: HttpServerChild,
  message: object,
  sessionId?: string,
): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: {
        Host: url.host,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...server.auth,
        ...(sessionId ? { 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': '2025-06-18' } : {}),
      },
    });
    req.on('response', (res) => resolve({ req, res }));
    req.on('error', reject);
    req.end(JSON.stringify(message));
  });
}

/** POST and read the whole response. */
async function exchange(server: HttpServerChild, message: object, sessionId?: string) {
  const { res } = await post(server, message, sessionId);
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, sessionId: String(res.headers['mcp-session-id'] ?? ''), body };
}

async function openSession(server: HttpServerChild): Promise<string> {
  const opened = await exchange(server, INITIALIZE);
  expect(opened.status).toBe(200);
  await exchange(server, { jsonrpc: '2.0', method: 'notifications/initialized' }, opened.sessionId);
  return opened.sessionId;
}

const ping = (server: HttpServerChild, sessionId: string) =>
  exchange(server, { jsonrpc: '2.0', id: 'ping', method: 'ping' }, sessionId).then((reply) => reply.status);

describe('a client that goes away mid-call', () => {
  // One slot: a call left running would hold it, and the next call would wait for it.
  const server = useHttpServer({ OLLAMA_MCP_CONCURRENCY: '1' });

  it('cancels its call: the model process is killed within seconds, the run is logged cancelled, the slot is free', async () => {
    const sessionId = await openSession(server);
    const { req } = await post(
      server,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'long @fake:sleep_ms=20000', task_id: 'dropped' } },
      },
      sessionId,
    );
    await waitFor(() => readRunTrace(server.sandbox).some((e) => e.event === 'start'), 10_000, 'the fake model to start');
    const pid = readRunTrace(server.sandbox).find((e) => e.event === 'start')!.pid;

    req.destroy(); // the client goes away: its socket closes, no DELETE, no cancel notification
    await waitFor(
      () => readRunTrace(server.sandbox).some((e) => e.event === 'exit' && e.pid === pid),
      5_000,
      'the fake model to exit',
    );
    await waitFor(() => !isAlive(pid), 5_000, 'the fake model process to be gone'); // its exit line comes just before it exits
    await waitFor(() => readRuns(server.sandbox).some((run) => run.task_id === 'dropped'), 5_000, 'the run to be logged');
    expect(readRuns(server.sandbox).find((run) => run.task_id === 'dropped')).toMatchObject({ status: 'cancelled' });
    const wentAway = `session ${sessionId}: the client went away before the reply to request 7; cancelling it`;
    await waitFor(() => server.stderr().includes(wentAway), 5_000, 'the cancellation on stderr');

    // The only slot is free again: another client's call runs now, not in 20 s.
    const client = new Client({ name: 'next', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } }));
    try {
      const result = await client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'next' } }, undefined, {
        timeout: 8_000,
      });
      expect((result.structuredContent as unknown as RunReply).status).toBe('ok');
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe('sessions clients never closed', () => {
  const server = useHttpServer();

  it('64 idle sessions (the limit) and one more: the new one gets in at once, the one used longest ago gets 404 next', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 64; i += 1) sessions.push((await exchange(server, INITIALIZE)).sessionId);
    expect(new Set(sessions).size).toBe(64);

    const newcomer = await exchange(server, INITIALIZE);
    expect(newcomer.status).toBe(200);
    expect(await ping(server, newcomer.sessionId)).toBe(200);
    expect(await ping(server, sessions[0]!)).toBe(404);
    expect(await ping(server, sessions[1]!)).toBe(200);
    const evicted = `session ${sessions[0]} closed (evicted: the session table is full`;
    await waitFor(() => server.stderr().includes(evicted), 5_000, 'the eviction on stderr');
  }, 30_000);
});
