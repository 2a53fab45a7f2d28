import { ClientClosedError, ClientOfflineError, ConnectionTimeoutError, TimeoutError } from '@redis/client';

/** The client gave up on a command because it is not connected (or closed). */
export function isOffline(error: unknown): boolean {
  return error instanceof ClientOfflineError || error instanceof ClientClosedError;
}

/** A one-line reason from the client's errors (which may be AggregateErrors without a message). */
export function describeRedisError(error: unknown, timeoutMs: number): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describeRedisError(error.errors[0], timeoutMs);
  if (error instanceof ClientClosedError) return 'the client is closed';
  if (error instanceof ClientOfflineError) return 'not connected (reconnecting)';
  if (error instanceof TimeoutError) return `no answer within ${timeoutMs} ms`;
  if (error instanceof ConnectionTimeoutError) return 'the connection timed out';
  const { code, message, name } = error as NodeJS.ErrnoException;
  const text = message || name || String(error);
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}
