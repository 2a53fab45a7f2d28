import type { IncomingMessage, ServerResponse } from 'node:http';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error as the whole HTTP response (or the end of one already streaming). */
export function sendError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: string | number | null = null,
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Does the body (a message or a batch) hold an `initialize` request? */
export function isInitialization(body: unknown): boolean {
  return Array.isArray(body) ? body.some((message) => isInitializeRequest(message)) : isInitializeRequest(body);
}

/** What a client may still send after its 413 before the connection is cut, in bytes and time. */
const DISCARD_AFTER_413_BYTES = 64 * 1024 * 1024;
const DISCARD_AFTER_413_MS = 10_000;

/**
 * After a 413 (sent as soon as the limit is passed), read and drop the rest of the body, within a
 * bound, instead of closing at once. Closing a socket with unread data makes the kernel reset the
 * connection, and a reset can reach the client before it has read the 413: it would see
 * ECONNRESET instead of the reason. Past the bound the connection is cut anyway.
 */
export function discardRestOfBody(req: IncomingMessage): void {
  let discarded = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, DISCARD_AFTER_413_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_AFTER_413_BYTES) cut();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** The request body, or `tooLarge` as soon as it passes `maxBytes` (then call `discardRestOfBody`). */
export async function readBody(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ tooLarge: true } | { tooLarge: false; text: string }> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return { tooLarge: true };
  // Events rather than `for await`: leaving a `for await` early destroys the socket, and the 413 with it.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      resolve({ tooLarge: true });
    };
    const onEnd = () => resolve({ tooLarge: false, text: Buffer.concat(chunks).toString('utf8') });
    const onError = (error: Error) => reject(error);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
  });
}
