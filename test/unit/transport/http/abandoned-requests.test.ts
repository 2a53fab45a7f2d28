import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { cancelWhenAbandoned, requestIdsOf } from '../../../../src/transport/http/abandoned-requests.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function fakeResponse(): ServerResponse & { writableEnded: boolean } {
  const res = new EventEmitter() as unknown as ServerResponse & { writableEnded: boolean };
  Object.assign(res, { writableEnded: false, socket: { destroyed: false } });
  return res;
}

describe('requestIdsOf', () => {
  it('takes the ids of requests only, from a message or a batch', () => {
    expect(requestIdsOf({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} })).toEqual([3]);
    expect(
      requestIdsOf([
        { jsonrpc: '2.0', id: 'a', method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 9, result: {} },
      ]),
    ).toEqual(['a']);
    expect(requestIdsOf(undefined)).toEqual([]);
  });
});

describe('cancelWhenAbandoned', () => {
  it('cancels the requests of a response closed before it ended, as the client would', async () => {
    const received: JSONRPCMessage[] = [];
    const res = fakeResponse();
    cancelWhenAbandoned({ onmessage: (m) => received.push(m) }, res, [7, 'x']);
    res.emit('close');
    expect(received).toEqual([]); // on the next turn, once the request has reached the server
    await nextTurn();
    expect(received).toEqual([
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: expect.any(String) } },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x', reason: expect.any(String) } },
    ]);
  });

  it('does nothing when the reply was sent before the close', async () => {
    const received: JSONRPCMessage[] = [];
    const res = fakeResponse();
    cancelWhenAbandoned({ onmessage: (m) => received.push(m) }, res, [7]);
    res.writableEnded = true;
    res.emit('close');
    await nextTurn();
    expect(received).toEqual([]);
  });

  it('cancels at once when the connection was already gone', async () => {
    const received: JSONRPCMessage[] = [];
    const res = fakeResponse();
    Object.assign(res, { socket: { destroyed: true } });
    cancelWhenAbandoned({ onmessage: (m) => received.push(m) }, res, [1]);
    await nextTurn();
    expect(received).toHaveLength(1);
  });
});
