/**
 * Issue 8, "to keep true": 500 concurrent HTTP calls all succeed, never more than the concurrency
 * limit run at once, and runs.jsonl gets 500 intact lines; a 50 MB body is refused with 413 at
 * once, and the server keeps serving.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import {
  makeSandbox,
  maxConcurrent,
  readRuns,
  readRunTrace,
  startHttpServerChild,
  type HttpServerChild,
  type Sandbox,
} from '../e2e/harness.js';
import { writeQuickOllama } from './quick-ollama.js';

const CONCURRENCY = 4;
const CALLS = 500;

describe('the HTTP server under load', () => {
  let sandbox: Sandbox;
  let server: HttpServerChild;
  let url: string;
  beforeAll(async () => {
    sandbox = makeSandbox();
    const bin = writeQuickOllama(sandbox.fakeStateDir, 0, 20);
    server = await startHttpServerChild(sandbox, {
      OLLAMA_BIN: bin,
      OLLAMA_MCP_PREFLIGHT: '0',
      OLLAMA_MCP_CONCURRENCY: String(CONCURRENCY),
    });
    url = server.url;
  });
  afterAll(async () => server?.stop());

  it(`${CALLS} concurrent calls: all ok, at most ${CONCURRENCY} running at once, ${CALLS} intact runs.jsonl lines`, async () => {
    const client = new Client({ name: 'load', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: server.auth } }));
    try {
      const results = await Promise.all(
        Array.from({ length: CALLS }, (_, i) =>
          client.callTool(
            { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: `call ${i}`, task_id: `load-${i}` } },
            undefined,
            {
              timeout: 55_000,
            },
          ),
        ),
      );
      const statuses = results.map((result) => (result.structuredContent as unknown as RunReply).status);
      expect(statuses.filter((status) => status === 'ok')).toHaveLength(CALLS);
    } finally {
      await client.close();
    }
    const trace = readRunTrace(sandbox);
    expect(trace.filter((event) => event.event === 'start')).toHaveLength(CALLS);
    const overlap = maxConcurrent(trace);
    expect(overlap).toBeLessThanOrEqual(CONCURRENCY);
    expect(overlap).toBeGreaterThanOrEqual(2); // the calls really did run side by side
    const runs = readRuns(sandbox); // throws on a line that is not JSON
    expect(runs).toHaveLength(CALLS);
    expect(new Set(runs.map((run) => run.task_id))).toEqual(new Set(Array.from({ length: CALLS }, (_, i) => `load-${i}`)));
    expect(runs.every((run) => run.status === 'ok')).toBe(true);
  }, 60_000);

  it('a 50 MB body is refused with 413 at once, read no further than the limit, and the server keeps serving', async () => {
    const target = new URL(url);
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    const total = 50 * 1024 * 1024;
    let sent = 0;
    let sentAtResponse = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          ...server.auth,
          Host: target.host,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
      });
      req.on('response', (res) => {
        sentAtResponse = sent;
        resolve(res.statusCode ?? 0);
        res.resume();
        req.destroy();
      });
      // A reset before the answer would hide the 413 from a real client: that is a failure, not noise.
      req.on('error', (error: NodeJS.ErrnoException) => reject(new Error(`no answer before ${error.code ?? error.message}`)));
      req.write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"');
      // Streamed (no Content-Length): the server must stop reading at its limit and answer.
      const pump = () => {
        while (sent < total && !req.destroyed) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        if (!req.destroyed) req.end('"}}');
      };
      pump();
    });
    expect(status).toBe(413);
    expect(sentAtResponse).toBeLessThan(total); // answered before the client finished sending

    const declared = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { ...server.auth, Host: target.host, 'Content-Type': 'application/json', 'Content-Length': String(total) },
      });
      req.on('response', (res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write('{"jsonrpc":"2.0",'); // the rest never comes: the answer must not wait for it
    });
    expect(declared).toBe(413);

    const client = new Client({ name: 'after', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: server.auth } }));
    const result = await client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'after' } });
    expect((result.structuredContent as unknown as RunReply).status).toBe('ok');
    await client.close();
  });
});
