import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LineStdioTransport } from '../../../src/transport/stdio-transport.js';

async function started(maxMessageBytes = 1000) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const logs: string[] = [];
  const transport = new LineStdioTransport({ stdin, stdout, maxMessageBytes, log: (m) => logs.push(m) });
  const messages: JSONRPCMessage[] = [];
  let closed = 0;
  transport.onmessage = (message) => messages.push(message);
  transport.onclose = () => (closed += 1);
  await transport.start();
  let written = '';
  stdout.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
  const replies = () =>
    written
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number; message: string } });
  return { stdin, stdout, transport, messages, logs, replies, closed: () => closed };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('LineStdioTransport', () => {
  it('answers an oversized line with an error carrying its id, and goes on reading', async () => {
    const t = await started(1000);
    t.stdin.write(`{"method":"tools/call","params":{"pad":"${'x'.repeat(5000)}`);
    t.stdin.write(`${'x'.repeat(5000)}"},"jsonrpc":"2.0","id":3}\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n`);
    await tick();
    expect(t.replies()).toEqual([
      { jsonrpc: '2.0', id: 3, error: { code: -32600, message: expect.stringContaining('limit of 1000 bytes') } },
    ]);
    expect(t.messages).toEqual([{ jsonrpc: '2.0', id: 4, method: 'ping' }]);
    expect(t.logs[0]).toMatch(/refused a message on stdin: Request too large/);
    expect(t.closed()).toBe(0);
  });

  it('answers an oversized line whose id is not valid JSON, and goes on reading', async () => {
    const t = await started(1000);
    t.stdin.write(`{"jsonrpc":"2.0","id":"\\q","method":"tools/call","params":{"pad":"${'x'.repeat(5000)}"}}\n`);
    t.stdin.write('{"jsonrpc":"2.0","id":4,"method":"ping"}\n');
    await tick();
    expect(t.replies()).toEqual([{ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) }]);
    expect(t.messages).toEqual([{ jsonrpc: '2.0', id: 4, method: 'ping' }]);
    expect(t.closed()).toBe(0);
  });

  it('sends what the server sends, one JSON line each', async () => {
    const t = await started();
    await t.transport.send({ jsonrpc: '2.0', id: 1, result: {} });
    expect(t.replies()).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('closes with a reason when stdin fails', async () => {
    const t = await started();
    const errors: Error[] = [];
    t.transport.onerror = (error) => errors.push(error);
    t.stdin.emit('error', Object.assign(new Error('read EIO'), { code: 'EIO' }));
    expect(t.closed()).toBe(1);
    expect(t.transport.closeError?.message).toBe('stdin failed: read EIO');
    expect(errors).toHaveLength(1);
  });

  it('closes with a reason when stdout breaks, and later sends fail instead of throwing', async () => {
    const t = await started();
    t.stdout.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(t.closed()).toBe(1);
    expect(t.transport.closeError?.message).toMatch(/EPIPE/);
    t.stdout.destroy();
    await expect(t.transport.send({ jsonrpc: '2.0', id: 1, result: {} })).rejects.toThrow(/stdout is closed/);
  });

  it('close() is a plain close: no reason, onclose once, nothing more read', async () => {
    const t = await started();
    await t.transport.close();
    await t.transport.close();
    t.stdin.write('{"jsonrpc":"2.0","id":4,"method":"ping"}\n');
    await tick();
    expect(t.closed()).toBe(1);
    expect(t.transport.closeError).toBeUndefined();
    expect(t.messages).toEqual([]);
  });

  it('logs a refused line with its control characters escaped: nothing a terminal would act on', async () => {
    const t = await started();
    t.stdin.write('\u001b]52;c;aGk=\u0007\n\u001b[2J\u009b31m\n');
    await tick();
    expect(t.replies()).toHaveLength(2); // both still answered
    expect(t.logs).toHaveLength(2);
    expect(t.logs[0]).toContain('\\x1b]52;c;aGk=\\x07');
    expect(t.logs[1]).toContain('\\x1b[2J\\x9b31m');
    // eslint-disable-next-line no-control-regex
    for (const line of t.logs) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
