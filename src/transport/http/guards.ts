import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname as osHostname, networkInterfaces } from 'node:os';
import type { HttpAuth } from './access.js';

// The HTTP transport's checks before any JSON-RPC is read: Host and Origin (DNS rebinding), the
// bearer token, the route and the method. Pure functions of the request's headers and the listener.

/** The MCP endpoint. */
export const MCP_PATH = '/mcp';
/** The metrics, in Prometheus' text format (GET only), when the listener serves them. */
export const METRICS_PATH = '/metrics';

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
  const bound = formatHost(bindHost);
  if (isLoopbackHost(bindHost)) return new Set([...LOOPBACK_NAMES, bound]);
  if (bound !== '0.0.0.0' && bound !== '[::]') return new Set([bound]);
  // Every interface: this machine's own addresses and name (the token is the real guard here).
  const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  return new Set([...LOOPBACK_NAMES, osHostname().toLowerCase(), ...addresses.map(({ address }) => formatHost(address))]);
}

interface Place {
  readonly name: string;
  readonly port: number;
}

/** Split a Host header, `name[:port]` / `[v6][:port]`; undefined when malformed. */
function hostHeaderPlace(value: string): Place | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value.trim());
  return match?.[1] ? { name: match[1].toLowerCase(), port: match[2] === undefined ? 80 : Number(match[2]) } : undefined;
}

/** The host and port of an `http:` Origin; undefined for any other (the opaque origin "null" included). */
function originPlace(value: string): Place | undefined {
  const origin = URL.canParse(value) ? new URL(value) : undefined;
  if (origin?.protocol !== 'http:') return undefined;
  return { name: origin.hostname.toLowerCase(), port: origin.port === '' ? 80 : Number(origin.port) };
}

/** What the checks compare a request with; the port and host names are known once it listens. */
export interface Listener {
  readonly auth: HttpAuth;
  port: number;
  hostNames: ReadonlySet<string>;
  /** The server is shutting down: every request gets a 503. */
  closing: boolean;
  /** `/metrics` is served, behind the same checks as `/mcp`. */
  readonly metrics?: boolean;
}

interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string>;
  /** The line logged, for refusals an operator should see. */
  readonly log?: string;
}

function forbidden(header: 'Host' | 'Origin', value: string | null): Refusal {
  const shown = JSON.stringify(value);
  return {
    status: 403,
    message: `Forbidden: invalid ${header} header ${shown}`,
    log: `refused a request with ${header} ${shown} (403)`,
  };
}

/** Why a request is refused before its body is read (checked in this order), or null. */
export function refusal(req: Pick<IncomingMessage, 'headers' | 'url' | 'method'>, listener: Listener): Refusal | null {
  const { auth, hostNames, port } = listener;
  const isOurs = (place: Place | undefined) => place !== undefined && place.port === port && hostNames.has(place.name);
  // DNS rebinding: the Host header must name this server, and a browser's Origin must be ours.
  const host = req.headers.host;
  if (!host || !isOurs(hostHeaderPlace(host))) return forbidden('Host', host ?? null);
  const origin = req.headers.origin;
  if (origin !== undefined && !isOurs(originPlace(origin))) return forbidden('Origin', origin);
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
  const path = (req.url ?? '/').split('?')[0];
  if (path === METRICS_PATH && listener.metrics === true) {
    return req.method === 'GET' ? null : { status: 405, message: 'Method not allowed: use GET', headers: { Allow: 'GET' } };
  }
  if (path !== MCP_PATH) return { status: 404, message: `Not found: the MCP endpoint is ${MCP_PATH}` };
  if (req.method !== 'POST' && req.method !== 'GET' && req.method !== 'DELETE') {
    return { status: 405, message: 'Method not allowed: use POST, GET or DELETE', headers: { Allow: 'GET, POST, DELETE' } };
  }
  if (listener.closing) return { status: 503, message: 'Service unavailable: the server is shutting down' };
  return null;
}
