/**
 * Who may call the HTTP transport. By default a bearer token: OLLAMA_MCP_HTTP_TOKEN when set, else
 * the one kept in the data dir (token-file.ts). Host and Origin checks stop browsers, not the
 * other accounts of a shared machine: without a token any local process could run models as
 * this user. OLLAMA_MCP_HTTP_AUTH=none turns the check off, on a loopback address only.
 */
import { loadOrCreateTokenFile, type TokenFile } from './token-file.js';

export const TOKEN_VARIABLE = 'OLLAMA_MCP_HTTP_TOKEN';
export const AUTH_VARIABLE = 'OLLAMA_MCP_HTTP_AUTH';
/** The name the README's `claude mcp add` lines give the server. */
const CLIENT_SIDE_NAME = 'ollama-runner';

/** What the HTTP server checks: a bearer token (with where a client finds it, said in every 401), or nothing. */
export type HttpAuth = { readonly kind: 'bearer'; readonly token: string; readonly hint: string } | { readonly kind: 'none' };

export type HttpAccess =
  | { readonly auth: HttpAuth & { kind: 'bearer' }; readonly source: 'variable' }
  | { readonly auth: HttpAuth & { kind: 'bearer' }; readonly source: 'file'; readonly tokenFile: TokenFile }
  | { readonly auth: HttpAuth & { kind: 'none' }; readonly source: 'none' };

interface AccessSettings {
  /** OLLAMA_MCP_HTTP_AUTH. */
  readonly mode: 'token' | 'none';
  /** OLLAMA_MCP_HTTP_TOKEN. */
  readonly token: string | undefined;
  /** Where the token file is kept (the telemetry dir). */
  readonly dataDir: string;
}

/** The access the settings ask for; reads or creates the token file when no token is set. Throws HttpServerError. */
export async function resolveHttpAccess(settings: AccessSettings): Promise<HttpAccess> {
  if (settings.mode === 'none') return { auth: { kind: 'none' }, source: 'none' };
  if (settings.token !== undefined) {
    const hint = `The token is the value of ${TOKEN_VARIABLE} the server was started with.`;
    return { auth: { kind: 'bearer', token: settings.token, hint }, source: 'variable' };
  }
  const tokenFile = await loadOrCreateTokenFile(settings.dataDir);
  const hint = `The token is in ${tokenFile.file}, readable only by the user running the server (or start the server with ${TOKEN_VARIABLE} set).`;
  return { auth: { kind: 'bearer', token: tokenFile.token, hint }, source: 'file', tokenFile };
}

interface AccessAnnouncement {
  /** Diagnostics, one line each. */
  readonly notes: readonly string[];
  /** The command that connects Claude Code, to be shown alone on its line so it can be copied. */
  readonly command: string;
}

/**
 * What to say on stderr once the server listens. The token itself is shown only to a terminal
 * (`showToken`); a log gets `$(cat FILE)`, which works as well pasted in a shell and leaks nothing.
 */
export function announceAccess(url: string, access: HttpAccess, showToken: boolean, hostname: string): AccessAnnouncement {
  const clientUrl = url.replace(/^http:\/\/(0\.0\.0\.0|\[::\])(?=:)/, `http://${hostname}`);
  const command = `claude mcp add --transport http ${CLIENT_SIDE_NAME} ${clientUrl}`;
  const header = (token: string) => `${command} --header "Authorization: Bearer ${token}"`;
  switch (access.source) {
    case 'none':
      return {
        notes: [
          `no authentication (${AUTH_VARIABLE}=none): every local user and process can call this server and run models as its user. To connect Claude Code:`,
        ],
        command,
      };
    case 'variable':
      return {
        notes: [`clients must send the token set in ${TOKEN_VARIABLE}. To connect Claude Code:`],
        command: header(`$${TOKEN_VARIABLE}`),
      };
    case 'file': {
      const { file, origin, replacedBecause, token } = access.tokenFile;
      const notes = [
        origin === 'replaced'
          ? `replaced the bearer token in ${file}: the old file ${replacedBecause ?? 'could not be trusted'}; clients set up with the old token need the new one`
          : `clients must send the bearer token ${origin === 'created' ? 'just created' : 'kept'} in ${file} (readable by this user only; delete it and restart for a new one, or set ${TOKEN_VARIABLE})`,
        'To connect Claude Code:',
      ];
      return { notes, command: header(showToken ? token : `$(cat ${shellQuote(file)})`) };
    }
  }
}

/** One POSIX shell word, as single quotes write it. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
