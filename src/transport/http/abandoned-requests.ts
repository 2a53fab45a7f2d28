/**
 * A client that goes away (socket closed, request aborted) mid-call cancels it, as over stdio.
 * The SDK's HTTP transport only forgets the response stream, so the tool handler would run on to
 * its timeout holding a slot, for a reply no one reads. Here the request is cancelled as the
 * client's own `notifications/cancelled` would do: the handler's signal aborts, the model process
 * is killed and the run is logged `cancelled`.
 */
import type { ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** The ids of the JSON-RPC requests in a POST body (one message or a batch); notifications and responses have none to cancel. */
export function requestIdsOf(body: unknown): RequestId[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  return messages.filter((message) => isJSONRPCRequest(message)).map((message) => message.id);
}

/**
 * When `res` closes before it was ended, cancel the requests it was to answer. `transport` must be
 * connected to its server (the cancellation goes in where the client's messages do).
 */
export function cancelWhenAbandoned(
  transport: Pick<Transport, 'onmessage'>,
  res: ServerResponse,
  ids: readonly RequestId[],
  onCancel: (id: RequestId) => void = () => {},
): void {
  if (ids.length === 0) return;
  const cancelIfUnanswered = () => {
    if (res.writableEnded) return; // the reply was sent
    // On the next turn of the event loop: the SDK hands the request to its server without any
    // I/O in between, so by then the request is known and its handler's signal can be aborted.
    setImmediate(() => {
      for (const id of ids) {
        onCancel(id);
        transport.onmessage?.({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: id, reason: 'the HTTP client disconnected before the reply' },
        });
      }
    });
  };
  if (res.socket === null || res.socket.destroyed) cancelIfUnanswered();
  else res.once('close', cancelIfUnanswered);
}
