/** A validated `OLLAMA_MCP_STATE_URL`: where the shared state lives. */
export interface RedisTarget {
  /** `rediss:` connects with TLS. */
  readonly tls: boolean;
  readonly host: string;
  readonly port: number;
  /** Database number (the URL's path), 0 when absent. */
  readonly db: number;
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** The URL with the password replaced by `***`: the only form ever shown. */
  readonly redacted: string;
}

const DEFAULT_PORT = 6379;
/** Redis's own limit for a database index is the server's `databases` setting; this is only a sanity bound. */
const MAX_DB = 1_000_000;

/** Parse `redis://[user:pass@]host[:port][/db]` or `rediss://...` (TLS): the target, or what is wrong, never the password. */
export function parseRedisUrl(raw: string): RedisTarget | { readonly error: string } {
  const shown = redactRedisUrl(raw);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: `\`${shown}\` is not a URL; expected redis://[user:password@]host[:port][/db] or rediss://... for TLS` };
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    return {
      error: `the scheme must be redis:// (or rediss:// for TLS), got \`${url.protocol.replace(/:$/, '')}://\` in \`${shown}\``,
    };
  }
  if (url.hostname === '') return { error: `\`${shown}\` has no host; expected redis://host[:port][/db]` };
  if (url.search !== '' || url.hash !== '') {
    return { error: `\`${shown}\` has a query or fragment; only redis://[user:password@]host[:port][/db] is understood` };
  }
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) {
    return { error: `the database must be a whole number (redis://host:port/0), got \`/${path}\` in \`${shown}\`` };
  }
  const db = path === '' ? 0 : Number(path);
  if (db > MAX_DB) return { error: `the database number ${path} is out of range in \`${shown}\`` };
  const decode = (value: string): string | undefined => (value === '' ? undefined : decodeURIComponent(value));
  return {
    tls: url.protocol === 'rediss:',
    // URL keeps the brackets of an IPv6 literal; the socket wants the bare address.
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? DEFAULT_PORT : Number(url.port),
    db,
    username: decode(url.username),
    password: decode(url.password),
    redacted: shown,
  };
}

export function isRedisUrlError(parsed: RedisTarget | { readonly error: string }): parsed is { readonly error: string } {
  return 'error' in parsed;
}

/** `redis://user:secret@host` -> `redis://user:***@host`, `redis://secret@host` -> `redis://***@host`, even in a non-URL. */
export function redactRedisUrl(raw: string): string {
  // Up to the LAST `@`: a password may hold an unencoded `@` or `/` (`redis://u:p@s/s@host`), and a
  // valid Redis URL has no `@` after its host.
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)(.*)@/is, (_, scheme: string, userInfo: string) => {
    const colon = userInfo.indexOf(':');
    if (colon === -1) return `${scheme}***@`;
    return `${scheme}${userInfo.slice(0, colon)}:***@`;
  });
}

/** Remove the password from any text (an error message that echoed it), whatever its encoding. */
export function withoutSecret(text: string, target: Pick<RedisTarget, 'password'>): string {
  const secret = target.password;
  if (secret === undefined || secret === '') return text;
  let out = text;
  for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***');
  return out;
}
