import { createHash, timingSafeEqual } from 'node:crypto';
import { hostname as osHostname, networkInterfaces } from 'node:os';

// The HTTP transport's checks before any JSON-RPC is read: Host and Origin (DNS rebinding), and
// the bearer token. Pure functions of the request's headers and the listener's address.

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'] as const;

/** Is this bind address reachable only from this machine? */
export function isLoopbackHost(host: string): boolean {
  const h = unbracket(host.trim().toLowerCase());
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Does the `Authorization` header carry the token whose SHA-256 is `digest`? (Constant-time.) */
export function tokenMatches(presented: string, digest: Buffer): boolean {
  return timingSafeEqual(sha256(presented), digest);
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return match?.[1];
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
export function hostNamesFor(bindHost: string, extra: readonly string[]): ReadonlySet<string> {
  const names = new Set<string>(extra.map(formatHost));
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

export function isAllowedHost(value: string, names: ReadonlySet<string>, port: number): boolean {
  const parsed = parseHostHeader(value);
  return parsed !== undefined && parsed.port === port && names.has(parsed.name);
}

export function isAllowedOrigin(value: string, names: ReadonlySet<string>, port: number): boolean {
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
