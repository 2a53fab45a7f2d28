import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname as osHostname, networkInterfaces } from 'node:os';
import type { HttpAuth } from './access.js';

// The HTTP transport's checks before any JSON-RPC is read: Host and Origin (DNS rebinding), the
// bearer token, the route and the method. Pure functions of the request's headers and the listener.

/** The only path served. */
export const MCP_PATH = '/mcp';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'] as const;

/** Is this bind address reachable only from this machine? */
export function isLoopbackHost(host: string): boolean {
  const h = unbracket(host.trim().toLowerCase());
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Is `presented` the token? Constant-time: their SHA-256 digests are compared. */
function tokenMatches(presented: string, token: string): boolean {
  const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(sha256(presented), sha256(token));
}

function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '')?.[1];
}

export function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** `::1` → `[::1]`: the form a host takes in a URL and in a Host header. */
export function formatHost(host: string): string {
  const h = unbracket(host.trim().toLowerCase());
  return h.includes(':') ? `[${h}]` : h;
}

/** The host names a legitimate request may use to reach this listener. */
export function hostNamesFor(bindHost: string): ReadonlySet<string> {
  const names = new Set<string>();
  const bound = formatHost(bindHost);
  if (isLoopbackHost(bindHost)) {
    for (const name of LOOPBACK_NAMES) names.add(name);
    names.add(bound);
  } else if (bound === '0.0.0.0' || bound === '[::]') {
    // Every interface: this machine's own addresses and name (the token is the real guard here).
    for (const name of LOOPBACK_NAMES) names.add(name);
    names.add(osHostname().toLowerCase());
    for (const addresses of Object.values(networkInterfaces())) {
      for (const address of addresses ?? []) names.add(formatHost(address.address));
    }
  } else {
    names.add(bound);
  }
  return names;
}

/** Split `name[:port]` / `[v6][:port]`; undefined when malformed. */
function parseHostHeader(value: string): { name: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!match?.[1]) return undefined;
  return { name: match[1].toLowerCase(), port: match[2] === undefined ? 80 : Number(match[2]) };
}

function isAllowedHost(value: string, names: ReadonlySet<string>, port: number): boolean {
  const parsed = parseHostHeader(value);
  return parsed !== undefined && parsed.port === port && names.has(parsed.name);
}

function isAllowedOrigin(value: string, names: ReadonlySet<string>, port: number): boolean {
  let origin: URL;
  try {
    origin = new URL(value);
  } catch {
    return false; // includes the opaque origin "null"
  }
  if (origin.protocol !== 'http:') return false;
  const originPort = origin.port === '' ? 80 : Number(origin.port);
  return originPort === port && names.has(origin.hostname.toLowerCase());
}

/** What the checks compare a request with; the port and host names are known once it listens. */
export interface Listener {
  readonly auth: HttpAuth;
  port: number;
  hostNames: ReadonlySet<string>;
  /** The server is shutting down: every request gets a 503. */
  closing: boolean;
}

interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string>;
  /** The line logged, for refusals an operator should see. */
  readonly log?: string;
}

/** Why a request is refused before its body is read (checked in this order), or null. */
export function refusal(req: Pick<IncomingMessage, 'headers' | 'url' | 'method'>, listener: Listener): Refusal | null {
  const { auth, hostNames, port } = listener;
  // DNS rebinding: the Host header must name this server, and a browser's Origin must be ours.
  const host = req.headers.host;
  if (!host || !isAllowedHost(host, hostNames, port)) {
    const shown = JSON.stringify(host ?? null);
    return { status: 403, message: `Forbidden: invalid Host header ${shown}`, log: `refused a request with Host ${shown} (403)` };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !isAllowedOrigin(origin, hostNames, port)) {
    const shown = JSON.stringify(origin);
    return {
      status: 403,
      message: `Forbidden: invalid Origin header ${shown}`,
      log: `refused a request with Origin ${shown} (403)`,
    };
  }
  const presented = bearerToken(req.headers.authorization);
  if (auth.kind === 'bearer' && (presented === undefined || !tokenMatches(presented, auth.token))) {
    return {
      status: 401,
      message: `Unauthorized: send the header Authorization: Bearer <token>. ${auth.hint}`,
      headers: {
        'WWW-Authenticate': presented === undefined ? 'Bearer realm="mcp"' : 'Bearer realm="mcp", error="invalid_token"',
      },
      log: `refused a request ${presented === undefined ? 'without a bearer token' : 'with a wrong bearer token'} (401)`,
    };
  }
  if ((req.url ?? '/').split('?')[0] !== MCP_PATH) return { status: 404, message: `Not found: the MCP endpoint is ${MCP_PATH}` };
  if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
    return { status: 405, message: 'Method not allowed: use POST, GET or DELETE', headers: { Allow: 'GET, POST, DELETE' } };
  }
  if (listener.closing) return { status: 503, message: 'Service unavailable: the server is shutting down' };
  return null;
}
