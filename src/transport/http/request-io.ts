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

/** The request body, or `tooLarge` as soon as it passes `maxBytes`. */
export async function readBody(
  req: IncomingMessage,
  maxBytes: number,
): Promise<{ tooLarge: true } | { tooLarge: false; text: string }> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume(); // discard; the response closes the connection
    return { tooLarge: true };
  }
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
      req.resume(); // discard the rest; the response closes the connection
      resolve({ tooLarge: true });
    };
    const onEnd = () => resolve({ tooLarge: false, text: Buffer.concat(chunks).toString('utf8') });
    const onError = (error: Error) => reject(error);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
  });
}
