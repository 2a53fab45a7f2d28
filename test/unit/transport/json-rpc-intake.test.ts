import { describe, expect, it } from 'vitest';
import { findTopLevelId, interpretLine, refuseOversized } from '../../../src/transport/json-rpc-intake.js';

describe('interpretLine', () => {
  it('passes a valid request on as parsed, keeping an own __proto__ key for the tool schema to refuse', () => {
    const intake = interpretLine(
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"__proto__":{"x":1}}}}',
    );
    expect(intake.kind).toBe('message');
    const args = (intake as unknown as { message: { params: { arguments: object } } }).message.params.arguments;
    expect(Object.keys(args)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
  });

  it('passes notifications and responses on', () => {
    expect(interpretLine('{"jsonrpc":"2.0","method":"notifications/initialized"}').kind).toBe('message');
    expect(interpretLine('{"jsonrpc":"2.0","id":3,"result":{}}').kind).toBe('message');
  });

  it.each([
    ['invalid JSON', '{nope', null, -32700, /Parse error/],
    ['a bare value', '42', null, -32600, /must be a JSON object/],
    ['an object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', null, -32600, /"id" must be a string or an integer/],
    ['a null id', '{"jsonrpc":"2.0","id":null,"method":"ping"}', null, -32600, /"id"/],
    ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', null, -32600, /"id"/],
    ['params as an array', '{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}', 4, -32600, /"params" must be an object/],
    ['a wrong version', '{"jsonrpc":"1.0","id":"a","method":"ping"}', 'a', -32600, /"jsonrpc" must be "2.0"/],
    ['no method', '{"jsonrpc":"2.0","id":5}', 5, -32600, /"method" must be a string/],
    ['an extra member', '{"jsonrpc":"2.0","id":6,"method":"ping","extra":1}', 6, -32600, /unexpected member "extra"/],
  ])('answers %s with a JSON-RPC error', (_name, line, id, code, message) => {
    const intake = interpretLine(line);
    expect(intake.kind).toBe('refuse');
    const reply = (intake as { reply: { id: unknown; error: { code: number; message: string } } }).reply;
    expect(reply).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    expect(reply.error.message).toMatch(message);
  });

  it('answers a batch with one error per request in it, or one with a null id', () => {
    const intake = interpretLine(
      '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":"b","method":"ping"}]',
    );
    expect(intake).toMatchObject({
      kind: 'refuse',
      reply: [
        { id: 1, error: { code: -32600 } },
        { id: 'b', error: { code: -32600 } },
      ],
    });
    expect(interpretLine('[]')).toMatchObject({ kind: 'refuse', reply: { id: null, error: { code: -32600 } } });
  });

  it('does not answer a malformed response (there is no request to answer)', () => {
    expect(interpretLine('{"jsonrpc":"2.0","id":{"x":1},"result":{}}').kind).toBe('ignore');
  });
});

describe('refuseOversized', () => {
  it('names the size and the limit, with the id when the ends show it', () => {
    const intake = refuseOversized(
      40_000_000,
      33_554_432,
      '{"method":"tools/call","params":{"a":"xx',
      'xx"},"jsonrpc":"2.0","id":12}',
    );
    expect(intake).toMatchObject({ kind: 'refuse', reply: { id: 12, error: { code: -32600 } } });
    const message = (intake as { reply: { error: { message: string } } }).reply.error.message;
    expect(message).toContain('40000000 bytes');
    expect(message).toContain('33554432 bytes (32 MiB)');
  });
});

describe('findTopLevelId', () => {
  it.each([
    ['id first', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"yyy', '', 7],
    ['a string id first', '{ "jsonrpc" : "2.0", "id" : "abc", "method', '', 'abc'],
    ['id last (the SDK client order)', '{"method":"tools/call","params":{"x":"', 'yyy"},"jsonrpc":"2.0","id":42}', 42],
    ['a nested id only', '{"method":"tools/call","params":{"arguments":{"id":5,"prompt":"yy', 'yy"}}}', null],
    ['an id-like text inside a string', '{"method":"x","params":{"p":"{\\"id\\":5,', '\\"id\\":6}"}}', null],
    ['a nested id at the very end', '{"method":"x","params":', '{"id":9}}', null],
    ['nothing readable', 'zzzzzz', 'zzzz', null],
    ['an id that is not valid JSON', '{"jsonrpc":"2.0","id":"\\q","method":"x","params":{"p":"yy', '', null],
    ['a key that is not valid JSON before the id', '{"\\q":1,"id":2,"params":{"p":"yy', '', null],
    ['an unfinished string before the id', '{"method":"x","params":{"p":"yy', '"id":5}', null],
  ])('%s', (_name, head, tail, id) => {
    expect(findTopLevelId(head, tail)).toBe(id);
  });
});
