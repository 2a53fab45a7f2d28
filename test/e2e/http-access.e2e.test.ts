/**
 * Issue 20 §3: `--http` with default settings let any local account in (another user ran models
 * as the owner and reset the owner's escalated task). Host and Origin checks stop browsers, not
 * local processes: without OLLAMA_MCP_HTTP_TOKEN the server now requires a token it keeps, 0600,
 * in its data dir. As root the other user is `nobody`.
 */
import { chmodSync, statSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import {
  makeSandbox,
  readHttpToken,
  SERVER_ENTRY,
  serverEnv,
  startHttpServerChild,
  type HttpServerChild,
  type Sandbox,
} from './harness.js';
import { cannotReach } from '../helpers/other-user.js';

const AS_ROOT = process.getuid?.() === 0;
const NOBODY = 65534;
/** As root: why nobody cannot run node (installed under root's home), else null; that test then skips. */
const NOBODY_PROBLEM = AS_ROOT ? cannotReach({ uid: NOBODY, gid: NOBODY }, []) : null;
if (NOBODY_PROBLEM !== null) process.stderr.write(`the http test run as nobody skipped: ${NOBODY_PROBLEM}\n`);

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'access-e2e', version: '1' } },
});

async function initialize(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: INITIALIZE,
  });
  return { status: response.status, body: await response.text() };
}

const tokenFile = (sandbox: Sandbox) => path.join(sandbox.telemetryDir, 'http-token');
const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

/** What the other user gets: its read of the token file, and the status of an initialize without and with a guessed token. */
const OTHER_USER_SCRIPT = `
(async () => {
  const [url, file, body] = process.argv.slice(1);
  let read = 'read';
  try { require('node:fs').readFileSync(file); } catch (error) { read = error.code; }
  const post = async (headers) =>
    (await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers } })).status;
  const noToken = await post({});
  const guessed = await post({ Authorization: 'Bearer guessed-token-0123456789' });
  console.log(JSON.stringify({ read, noToken, guessed }));
})();
`;

describe('--http with default settings: a bearer token kept in the data dir', () => {
  let sandbox: Sandbox;
  let server: HttpServerChild;
  beforeAll(async () => {
    sandbox = makeSandbox();
    // The data dir is reachable by everyone: only the token file's own mode keeps others out.
    chmodSync(path.dirname(sandbox.telemetryDir), 0o755);
    chmodSync(sandbox.telemetryDir, 0o755);
    server = await startHttpServerChild(sandbox);
  });
  afterAll(async () => server?.stop());

  it('keeps the token in http-token, 0600, and shows on stderr the command that connects Claude Code', () => {
    expect(mode(tokenFile(sandbox))).toBe('600');
    expect(readHttpToken(sandbox)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(server.stderr()).toContain(`clients must send the bearer token just created in ${tokenFile(sandbox)}`);
    // stderr is not a terminal here: the command reads the file instead of carrying the secret into a log.
    expect(server.stderr()).toContain(
      `\n  claude mcp add --transport http ollama-runner ${server.url} --header "Authorization: Bearer $(cat '${tokenFile(sandbox)}')"\n`,
    );
    expect(server.stderr()).not.toContain(readHttpToken(sandbox));
  });

  it('answers a client without the token 401, saying where the token is and never the token', async () => {
    const refused = await initialize(server.url);
    expect(refused.status).toBe(401);
    const message = (JSON.parse(refused.body) as { error: { message: string } }).error.message;
    expect(message).toBe(
      `Unauthorized: send the header Authorization: Bearer <token>. The token is in ${tokenFile(sandbox)}, ` +
        'readable only by the user running the server (or start the server with OLLAMA_MCP_HTTP_TOKEN set).',
    );
    expect(refused.body).not.toContain(readHttpToken(sandbox));
    expect((await initialize(server.url, { Authorization: 'Bearer guessed-token-0123456789' })).status).toBe(401);
  });

  it('lets the owner in with the token from the file: the SDK client runs a model', async () => {
    const client = new Client({ name: 'owner', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } }));
    try {
      const result = await client.callTool({ name: 'ollama_run', arguments: { model: 'llama3.2', prompt: 'hi' } });
      expect((result.structuredContent as unknown as RunReply).status).toBe('ok');
    } finally {
      await client.close();
    }
  });

  // Another account exists to test with only when the tests run as root (then it is nobody).
  it.skipIf(!AS_ROOT || NOBODY_PROBLEM !== null)(
    'keeps another local user out: it cannot read the token file, and gets 401 with or without a guess',
    async () => {
      const other = await execa(process.execPath, ['-e', OTHER_USER_SCRIPT, server.url, tokenFile(sandbox), INITIALIZE], {
        uid: NOBODY,
        gid: NOBODY,
        env: { PATH: process.env.PATH ?? '' },
        reject: false,
      });
      expect(other.exitCode, other.stderr).toBe(0);
      expect(JSON.parse(other.stdout)).toEqual({ read: 'EACCES', noToken: 401, guessed: 401 });
    },
  );
});

describe('the token file across restarts', () => {
  it('keeps the token across a restart, and replaces a file other users could read', async () => {
    const sandbox = makeSandbox();
    const first = await startHttpServerChild(sandbox);
    await first.stop();
    const token = first.token!;

    const restarted = await startHttpServerChild(sandbox);
    try {
      expect(restarted.token).toBe(token);
      expect(restarted.stderr()).toContain(`clients must send the bearer token kept in ${tokenFile(sandbox)}`);
      expect((await initialize(restarted.url, { Authorization: `Bearer ${token}` })).status).toBe(200);
    } finally {
      await restarted.stop();
    }

    chmodSync(tokenFile(sandbox), 0o644);
    const replaced = await startHttpServerChild(sandbox);
    try {
      expect(replaced.token).not.toBe(token);
      expect(mode(tokenFile(sandbox))).toBe('600');
      expect(replaced.stderr()).toContain(
        `replaced the bearer token in ${tokenFile(sandbox)}: the old file could be read or changed by other users (mode 0644)`,
      );
      expect((await initialize(replaced.url, { Authorization: `Bearer ${token}` })).status).toBe(401);
    } finally {
      await replaced.stop();
    }
  }, 30_000);
});

describe('OLLAMA_MCP_HTTP_AUTH=none, the opt-out', () => {
  it('is refused with a non-loopback --host: exit 2, naming the variable', async () => {
    const sandbox = makeSandbox();
    const run = await execa(process.execPath, [SERVER_ENTRY, '--http', '--host', '0.0.0.0', '--port', '0'], {
      env: serverEnv(sandbox, { OLLAMA_MCP_HTTP_AUTH: 'none' }),
      reject: false,
      timeout: 15_000,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain(
      'refusing to listen on 0.0.0.0 without authentication (OLLAMA_MCP_HTTP_AUTH=none): anyone on the network could run models',
    );
  });

  it('is refused together with OLLAMA_MCP_HTTP_TOKEN: exit 2', async () => {
    const run = await execa(process.execPath, [SERVER_ENTRY, '--http', '--port', '0'], {
      env: serverEnv(makeSandbox(), { OLLAMA_MCP_HTTP_AUTH: 'none', OLLAMA_MCP_HTTP_TOKEN: 'a-long-random-secret-value' }),
      reject: false,
      timeout: 15_000,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('OLLAMA_MCP_HTTP_AUTH=none contradicts OLLAMA_MCP_HTTP_TOKEN');
  });

  it('is named in --help, with the token file', async () => {
    const help = await execa(process.execPath, [SERVER_ENTRY, '--help']);
    expect(help.stdout).toContain('OLLAMA_MCP_HTTP_AUTH=none');
    expect(help.stdout).toContain('http-token');
  });
});
