/**
 * The Streamable HTTP transport: `POST /mcp` (JSON-RPC in, SSE out), `GET /mcp` (the session's
 * server-to-client SSE stream) and `DELETE /mcp` (end the session).
 *
 * Built on Node's `http` module rather than the SDK's express helper: the SDK transport takes
 * `IncomingMessage`/`ServerResponse` directly, and everything express would add we need to do
 * ourselves anyway (`createMcpExpressApp` checks Host but not Origin, and knows neither bearer
 * tokens, nor our body limit, nor sessions). One small request handler keeps the order of the
 * checks visible: Host, Origin, token, route, method, body, session.
 *
 * Sessions are stateful (an `Mcp-Session-Id` header), one MCP `Server` per session, so progress
 * notifications and cancellation work for the whole life of a client's connection. Responses are
 * always SSE streams (never `enableJsonResponse`), which is what carries progress.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { HTTP_TOKEN_MIN_CHARS, HTTP_TOKEN_TOO_SHORT } from '../../config/ranges.js';
import type { App } from '../../mcp/server.js';
import { interpretMessage } from '../json-rpc-intake.js';
import { describeByteLimit, MAX_MESSAGE_BYTES } from '../message-limits.js';
import { terminalLine } from '../terminal-line.js';
import { AUTH_VARIABLE, TOKEN_VARIABLE, type HttpAuth } from './access.js';
import { cancelWhenAbandoned, requestIdsOf } from './abandoned-requests.js';
import { HttpServerError } from './errors.js';
import {
  bearerToken,
  formatHost,
  hostNamesFor,
  isAllowedHost,
  isAllowedOrigin,
  isLoopbackHost,
  sha256,
  tokenMatches,
  unbracket,
} from './guards.js';
import { discardRestOfBody, isInitialization, readBody, sendError } from './request-io.js';
import { SessionTable, type Session } from './sessions.js';

export { isLoopbackHost };
export { HttpServerError, isHttpServerError } from './errors.js';
export type { HttpAuth } from './access.js';

export { DEFAULT_HTTP_PORT } from '../../config/ranges.js';
/** The only path served. */
export const MCP_PATH = '/mcp';
/** Request bodies above this are refused with 413: the same limit as a stdio message, so every valid call fits. */
export const DEFAULT_MAX_BODY_BYTES = MAX_MESSAGE_BYTES;
/** Live sessions at most; one more `initialize` closes the idle one used longest ago, or gets a 503 when all are busy. */
export const DEFAULT_MAX_SESSIONS = 64;
/** A session with no open request or stream for this long is closed. */
export const DEFAULT_SESSION_IDLE_MS = 30 * 60_000;

export interface HttpServerOptions {
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
  /** Extra host names accepted in `Host`/`Origin` (e.g. a DNS name pointing at this machine). */
  readonly allowedHosts?: readonly string[];
  /** @default DEFAULT_MAX_BODY_BYTES */
  readonly maxBodyBytes?: number;
  /** @default DEFAULT_MAX_SESSIONS */
  readonly maxSessions?: number;
  /** @default DEFAULT_SESSION_IDLE_MS */
  readonly sessionIdleMs?: number;
  /** Diagnostics (one line each, control characters escaped); the caller sends them to stderr. @default none */
  readonly log?: (message: string) => void;
}

export interface RunningHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3333/mcp`. */
  readonly url: string;
  readonly port: number;
  /** Live sessions. */
  sessionCount(): number;
  /** Close every session (aborting its in-flight calls) and the listener. Safe to call twice. */
  close(): Promise<void>;
}

export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host?.trim() || '127.0.0.1';
  const requestedPort = options.port ?? 0;
  const auth = options.auth;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const sessionIdleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
  const sink = options.log ?? (() => {});
  // Logs quote what clients sent (headers, request ids): keep the terminal safe.
  const log = (message: string) => sink(terminalLine(message));

  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65_535) {
    throw new HttpServerError('http_config_error', `the HTTP port must be a whole number from 0 to 65535, got ${requestedPort}`);
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
  const tokenDigest = auth.kind === 'bearer' ? sha256(auth.token) : undefined;
  const unauthorized = auth.kind === 'bearer' ? `Unauthorized: send the header Authorization: Bearer <token>. ${auth.hint}` : '';

  const sessions = new SessionTable(maxSessions, log);
  let closing: Promise<void> | null = null;
  let port = requestedPort;
  let allowedHostNames: ReadonlySet<string> = new Set();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // 1. DNS rebinding: the Host header must name this server, and a browser's Origin must be ours.
    const hostHeader = req.headers.host;
    if (!hostHeader || !isAllowedHost(hostHeader, allowedHostNames, port)) {
      log(`refused a request with Host ${JSON.stringify(hostHeader ?? null)} (403)`);
      return sendError(res, 403, -32000, `Forbidden: invalid Host header ${JSON.stringify(hostHeader ?? null)}`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !isAllowedOrigin(origin, allowedHostNames, port)) {
      log(`refused a request with Origin ${JSON.stringify(origin)} (403)`);
      return sendError(res, 403, -32000, `Forbidden: invalid Origin header ${JSON.stringify(origin)}`);
    }
    // 2. The bearer token, when one is configured.
    if (tokenDigest !== undefined) {
      const presented = bearerToken(req.headers.authorization);
      if (presented === undefined || !tokenMatches(presented, tokenDigest)) {
        log(`refused a request ${presented === undefined ? 'without a bearer token' : 'with a wrong bearer token'} (401)`);
        const challenge = presented === undefined ? 'Bearer realm="mcp"' : 'Bearer realm="mcp", error="invalid_token"';
        return sendError(res, 401, -32000, unauthorized, { 'WWW-Authenticate': challenge });
      }
    }
    // 3. Route and method.
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname !== MCP_PATH) {
      return sendError(res, 404, -32000, `Not found: the MCP endpoint is ${MCP_PATH}`);
    }
    if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
      return sendError(res, 405, -32000, 'Method not allowed: use POST, GET or DELETE', { Allow: 'GET, POST, DELETE' });
    }
    if (closing) return sendError(res, 503, -32000, 'Service unavailable: the server is shutting down');

    // 4. The session named by the header, if any.
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;

    let body: unknown;
    if (req.method === 'POST') {
      const read = await readBody(req, maxBodyBytes);
      if (read.tooLarge) {
        discardRestOfBody(req);
        return sendError(
          res,
          413,
          -32000,
          `Payload too large: a request body must not exceed ${describeByteLimit(maxBodyBytes)}`,
        );
      }
      try {
        body = JSON.parse(read.text);
      } catch {
        return sendError(res, 400, -32700, 'Parse error: the body is not valid JSON');
      }
      // The SDK answers an invalid request with "Parse error" and a null id: say what is wrong, with its id.
      const intake = Array.isArray(body) ? null : interpretMessage(body);
      if (intake?.kind === 'refuse' && !Array.isArray(intake.reply)) {
        return sendError(res, 400, intake.reply.error.code, intake.reply.error.message, {}, intake.reply.id);
      }
      if (Array.isArray(body) && body.length === 0) {
        return sendError(res, 400, -32600, 'Invalid Request: an empty batch');
      }
    }

    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session) return sendError(res, 404, -32001, 'Session not found: start a new session with initialize');
      sessions.track(session, res, req.method === 'GET' ? 'stream' : 'request');
      cancelWhenAbandoned(session.transport, res, requestIdsOf(body), (id) =>
        log(`session ${session.id}: the client went away before the reply to request ${JSON.stringify(id)}; cancelling it`),
      );
      await session.transport.handleRequest(req, res, body);
      return;
    }

    // 5. No session: only an initialize request may open one.
    if (req.method !== 'POST' || !isInitialization(body)) {
      return sendError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send initialize first to open a session');
    }
    const release = await sessions.reserve();
    if (!release) {
      log(`refused a new session: all ${sessions.size} sessions have a call in flight (the limit) (503)`);
      return sendError(
        res,
        503,
        -32000,
        `Service unavailable: all ${maxSessions} MCP sessions (the limit) have a call in flight. Retry when one ends.`,
        { 'Retry-After': '30' },
      );
    }
    await openSession(req, res, body, release);
  };

  const openSession = async (req: IncomingMessage, res: ServerResponse, body: unknown, release: () => void): Promise<void> => {
    let session: Session | undefined;
    const server = options.createServer(options.app);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        release();
        session = sessions.newSession(id, transport, server);
        sessions.add(session, res);
      },
    });
    // Set before connect(): Protocol chains its own onclose after ours.
    transport.onclose = () => {
      if (session) sessions.ended(session);
    };
    server.onerror ??= (error: Error) => log(`session ${transport.sessionId ?? '(new)'}: ${error.message}`);
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      release();
      // An initialize the transport refused (bad headers, say) leaves a server with no session.
      if (transport.sessionId === undefined) await server.close().catch(() => {});
      // close() ran while this session was being opened: it did not see it.
      else if (closing && session) await sessions.close(session, 'server shutting down');
    }
  };

  const httpServer = createHttpServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log(`error handling ${req.method} ${req.url}: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) sendError(res, 500, -32603, 'Internal server error');
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      httpServer.off('listening', onListening);
      const where = `${host}:${requestedPort}`;
      const message =
        error.code === 'EADDRINUSE'
          ? `cannot listen on ${where}: the port is already in use (pick another port)`
          : error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND'
            ? `cannot listen on ${where}: no such local address`
            : error.code === 'EACCES'
              ? `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`
              : `cannot listen on ${where}: ${error.message}`;
      reject(new HttpServerError('listen_error', message));
    };
    const onListening = () => {
      httpServer.off('error', onError);
      resolve();
    };
    httpServer.once('error', onError);
    httpServer.once('listening', onListening);
    httpServer.listen(requestedPort, unbracket(host));
  });
  port = (httpServer.address() as AddressInfo).port;
  allowedHostNames = hostNamesFor(host, options.allowedHosts ?? []);
  httpServer.on('error', (error) => log(`HTTP server error: ${error.message}`));

  const reaper = setInterval(
    () => sessions.reapIdle(sessionIdleMs),
    Math.max(1_000, Math.min(60_000, Math.floor(sessionIdleMs / 4))),
  );
  reaper.unref();

  const url = `http://${formatHost(host)}:${port}${MCP_PATH}`;
  log(`listening on ${url}${auth.kind === 'bearer' ? ' (bearer token required)' : ' (no authentication)'}`);

  return {
    url,
    port,
    sessionCount: () => sessions.size,
    close() {
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
