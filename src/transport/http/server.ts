/**
 * The Streamable HTTP transport: `POST /mcp` (JSON-RPC in, SSE out), `GET /mcp` (the session's
 * server-to-client SSE stream) and `DELETE /mcp` (end the session).
 *
 * Built on Node's `http` module rather than the SDK's express helper, which checks Host but not
 * Origin, and knows neither bearer tokens, nor our body limit, nor sessions. The request handler
 * keeps the order of the checks visible: Host, Origin, token, route, method, body, session. Before
 * any of them, connections.ts bounds the TCP connections that serve no request.
 *
 * Sessions are stateful (an `Mcp-Session-Id` header), one MCP `Server` per session, so progress
 * notifications and cancellation work for the whole life of a client's connection. Responses are
 * always SSE streams (never `enableJsonResponse`), which is what carries progress.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { HTTP_CONNECTIONS, HTTP_TOKEN_MIN_CHARS, HTTP_TOKEN_TOO_SHORT } from '../../config/ranges.js';
import type { App } from '../../mcp/server.js';
import { interpretMessage } from '../json-rpc-intake.js';
import { describeByteLimit, MAX_MESSAGE_BYTES } from '../message-limits.js';
import { terminalLine } from '../terminal-line.js';
import { AUTH_VARIABLE, TOKEN_VARIABLE, type HttpAuth } from './access.js';
import { cancelWhenAbandoned, requestIdsOf } from './abandoned-requests.js';
import type { ConnectionCaps } from './connection-table.js';
import { guardConnections } from './connections.js';
import { HttpServerError } from './errors.js';
import { formatHost, hostNamesFor, isLoopbackHost, MCP_PATH, METRICS_PATH, refusal, unbracket, type Listener } from './guards.js';
import { discardRestOfBody, isInitialization, readBody, sendError } from './request-io.js';
import { SessionTable, type Session } from './sessions.js';

/** Live sessions at most; one more `initialize` closes the idle one used longest ago, or gets a 503 when all are busy. */
const DEFAULT_MAX_SESSIONS = 64;
/** A session with no open request or stream for this long is closed. */
const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;

interface HttpServerOptions {
  readonly app: App;
  /** Makes the MCP server for one session (one per client connection). */
  readonly createServer: (app: App) => Server;
  /** Interface to bind. @default "127.0.0.1" */
  readonly host?: string;
  /** Port to bind; 0 picks a free one. @default 0 */
  readonly port?: number;
  /**
   * `bearer`: every request needs `Authorization: Bearer <token>` (the 401 tells where the token is).
   * `none`: no check, refused on a non-loopback host. The CLI picks it (resolveHttpAccess).
   */
  readonly auth: HttpAuth;
  /** Request bodies above this are refused with 413. @default MAX_MESSAGE_BYTES, as a stdio line: every valid call fits */
  readonly maxBodyBytes?: number;
  /** @default DEFAULT_MAX_SESSIONS */
  readonly maxSessions?: number;
  /** @default DEFAULT_SESSION_IDLE_MS */
  readonly sessionIdleMs?: number;
  /**
   * TCP connections serving no request at most, in total and per remote address; cut to half the
   * open-file limit (connections.ts). @default HTTP_CONNECTIONS
   */
  readonly connections?: ConnectionCaps;
  /** Diagnostics (one line each, control characters escaped); the caller sends them to stderr. @default none */
  readonly log?: (message: string) => void;
  /** The metrics in Prometheus' text format, served at `/metrics` behind the same checks. @default not served */
  readonly metrics?: (() => Promise<string>) | null;
}

export interface RunningHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3333/mcp`. */
  readonly url: string;
  readonly port: number;
  sessionCount(): number;
  /** Open TCP connections, serving a request or not (see connections.ts). */
  connectionCount(): number;
  /** Close every session (aborting its in-flight calls) and the listener. Safe to call twice. */
  close(): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const { host, port: requestedPort, auth } = checkOptions(options);
  const sink = options.log ?? (() => {});
  // Logs quote what clients sent (headers, request ids): keep the terminal safe.
  const log = (message: string) => sink(terminalLine(message));
  const sessions = new SessionTable(options.maxSessions ?? DEFAULT_MAX_SESSIONS, log);
  const metrics = options.metrics ?? null;
  const ctx: RequestContext = {
    options,
    auth,
    sessions,
    log,
    port: requestedPort,
    hostNames: new Set(),
    closing: false,
    metrics: metrics !== null,
  };
  const httpServer = createHttpServer((req, res) => {
    handle(ctx, req, res).catch((error: unknown) => {
      log(`error handling ${req.method} ${req.url}: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) sendError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  });
  await listen(httpServer, host, requestedPort);
  ctx.port = (httpServer.address() as AddressInfo).port;
  ctx.hostNames = hostNamesFor(host);
  httpServer.on('error', (error) => log(`HTTP server error: ${error.message}`));
  const connections = guardConnections(httpServer, options.connections ?? HTTP_CONNECTIONS, log);

  const sessionIdleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
  const reapEveryMs = Math.max(1_000, Math.min(60_000, Math.floor(sessionIdleMs / 4)));
  const reaper = setInterval(() => sessions.reapIdle(sessionIdleMs), reapEveryMs);
  reaper.unref();

  const url = `http://${formatHost(host)}:${ctx.port}${MCP_PATH}`;
  log(`listening on ${url}${auth.kind === 'bearer' ? ' (bearer token required)' : ' (no authentication)'}`);
  let closing: Promise<void> | null = null;
  return {
    url,
    port: ctx.port,
    sessionCount: () => sessions.size,
    connectionCount: () => connections.size(),
    close() {
      ctx.closing = true;
      closing ??= (async () => {
        clearInterval(reaper);
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        await sessions.closeAll('server shutting down');
        // SSE streams and idle keep-alive sockets would hold the listener open.
        httpServer.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

/** The bind address, port and access, checked before anything listens. Throws HttpServerError. */
function checkOptions(options: HttpServerOptions): { host: string; port: number; auth: HttpAuth } {
  const host = options.host?.trim() || '127.0.0.1';
  const port = options.port ?? 0;
  const auth = options.auth;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new HttpServerError('http_config_error', `the HTTP port must be a whole number from 0 to 65535, got ${port}`);
  }
  if (auth.kind === 'bearer' && auth.token.length < HTTP_TOKEN_MIN_CHARS) {
    throw new HttpServerError('http_config_error', HTTP_TOKEN_TOO_SHORT, TOKEN_VARIABLE);
  }
  if (auth.kind === 'none' && !isLoopbackHost(host)) {
    throw new HttpServerError(
      'http_config_error',
      `refusing to listen on ${host} without authentication (${AUTH_VARIABLE}=none): anyone on the network could run models; unset ${AUTH_VARIABLE} to require a bearer token`,
      AUTH_VARIABLE,
    );
  }
  return { host, port, auth };
}

const LISTEN_PROBLEMS: Partial<Record<string, string>> = {
  EADDRINUSE: 'the port is already in use (pick another port)',
  EADDRNOTAVAIL: 'no such local address',
  ENOTFOUND: 'no such local address',
  EACCES: 'permission denied (ports below 1024 need privileges)',
};

/** Listen, or reject with a listen_error that says what to do. */
async function listen(httpServer: HttpServer, host: string, port: number): Promise<void> {
  httpServer.listen(port, unbracket(host));
  try {
    await once(httpServer, 'listening');
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new HttpServerError('listen_error', `cannot listen on ${host}:${port}: ${LISTEN_PROBLEMS[code ?? ''] ?? message}`);
  }
}

/** What the request handler needs: the listener (see `refusal`), the sessions, the log. */
interface RequestContext extends Listener {
  readonly options: HttpServerOptions;
  readonly sessions: SessionTable;
  readonly log: (message: string) => void;
}

/** One request: the checks before its body (`refusal`), its body, then its session. */
async function handle(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const refused = refusal(req, ctx);
  if (refused !== null) {
    if (refused.log !== undefined) ctx.log(refused.log);
    return sendError(res, refused.status, -32000, refused.message, refused.headers);
  }
  if (ctx.options.metrics && (req.url ?? '/').split('?')[0] === METRICS_PATH) return sendMetrics(res, ctx.options.metrics);
  let body: unknown;
  if (req.method === 'POST') {
    const message = await readMessage(req, res, ctx.options.maxBodyBytes ?? MAX_MESSAGE_BYTES);
    if (message === null) return;
    body = message.body;
  }
  const sessionHeader = req.headers['mcp-session-id'];
  const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
  if (sessionId !== undefined) return toSession(ctx, sessionId, req, res, body);
  // No session: only an initialize request may open one.
  if (req.method !== 'POST' || !isInitialization(body)) {
    return sendError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send initialize first to open a session');
  }
  const release = await ctx.sessions.reserve();
  if (!release) {
    ctx.log(`refused a new session: all ${ctx.sessions.size} sessions have a call in flight (the limit) (503)`);
    const message = `Service unavailable: all ${ctx.options.maxSessions ?? DEFAULT_MAX_SESSIONS} MCP sessions (the limit) have a call in flight. Retry when one ends.`;
    return sendError(res, 503, -32000, message, { 'Retry-After': '30' });
  }
  await openSession(ctx, req, res, body, release);
}

/** `/metrics`: the Prometheus text (a failure to collect is a 500, said in the body). */
async function sendMetrics(res: ServerResponse, metrics: () => Promise<string>): Promise<void> {
  let text: string;
  try {
    text = await metrics();
  } catch (error) {
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(`cannot collect the metrics: ${error instanceof Error ? error.message : String(error)}\n`);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(text);
}

/** A POST body as JSON, or null once it was answered (too large, not JSON, not a JSON-RPC message, an empty batch). */
async function readMessage(req: IncomingMessage, res: ServerResponse, maxBodyBytes: number): Promise<{ body: unknown } | null> {
  const read = await readBody(req, maxBodyBytes);
  if (read.tooLarge) {
    discardRestOfBody(req);
    sendError(res, 413, -32000, `Payload too large: a request body must not exceed ${describeByteLimit(maxBodyBytes)}`);
    return null;
  }
  let body: unknown;
  try {
    body = JSON.parse(read.text);
  } catch {
    sendError(res, 400, -32700, 'Parse error: the body is not valid JSON');
    return null;
  }
  // The SDK answers an invalid request with "Parse error" and a null id: say what is wrong, with its id.
  const intake = Array.isArray(body) ? null : interpretMessage(body);
  if (intake?.kind === 'refuse' && !Array.isArray(intake.reply)) {
    sendError(res, 400, intake.reply.error.code, intake.reply.error.message, {}, intake.reply.id);
    return null;
  }
  if (Array.isArray(body) && body.length === 0) {
    sendError(res, 400, -32600, 'Invalid Request: an empty batch');
    return null;
  }
  return { body };
}

/** Hand the request to the session the header names. */
async function toSession(
  ctx: RequestContext,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const session = ctx.sessions.get(id);
  if (!session) return sendError(res, 404, -32001, 'Session not found: start a new session with initialize');
  ctx.sessions.track(session, res, req.method === 'GET' ? 'stream' : 'request');
  cancelWhenAbandoned(session.transport, res, requestIdsOf(body), (requestId) =>
    ctx.log(
      `session ${session.id}: the client went away before the reply to request ${JSON.stringify(requestId)}; cancelling it`,
    ),
  );
  await session.transport.handleRequest(req, res, body);
}

/** A new session for an initialize request, with its own MCP server; `release` frees the reserved place. */
async function openSession(
  ctx: RequestContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  release: () => void,
): Promise<void> {
  let session: Session | undefined;
  const server = ctx.options.createServer(ctx.options.app);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      release();
      session = ctx.sessions.add(id, transport, server, res);
    },
  });
  // Set before connect(): Protocol chains its own onclose after ours.
  transport.onclose = () => {
    if (session) ctx.sessions.ended(session);
  };
  server.onerror ??= (error: Error) => ctx.log(`session ${transport.sessionId ?? '(new)'}: ${error.message}`);
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } finally {
    release();
    // An initialize the transport refused (bad headers, say) leaves a server with no session.
    if (transport.sessionId === undefined) await server.close().catch(() => {});
    // close() ran while this session was being opened: it did not see it.
    else if (ctx.closing && session) await ctx.sessions.close(session, 'server shutting down');
  }
}
