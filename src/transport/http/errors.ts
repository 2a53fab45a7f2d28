/**
 * Why the HTTP server could not start: a bad option (`http_config_error`), the token file could not
 * be read or written (`token_file_error`), or the listen call failed (`listen_error`).
 */
export class HttpServerError extends Error {
  constructor(
    readonly kind: 'http_config_error' | 'token_file_error' | 'listen_error',
    message: string,
    readonly variable?: string,
  ) {
    super(message);
    this.name = 'HttpServerError';
  }
}

const KINDS: ReadonlySet<unknown> = new Set(['http_config_error', 'token_file_error', 'listen_error']);

export function isHttpServerError(error: unknown): error is HttpServerError {
  return error instanceof Error && KINDS.has((error as { kind?: unknown }).kind);
}
