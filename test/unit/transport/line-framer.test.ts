import { describe, expect, it } from 'vitest';
import { LineFramer, type FramedLine } from '../../../src/transport/line-framer.js';

const feed = (framer: LineFramer, ...chunks: string[]): FramedLine[] =>
  chunks.flatMap((chunk) => framer.push(Buffer.from(chunk, 'utf8')));

describe('LineFramer', () => {
  it('splits lines across and within chunks, drops CR and blank lines', () => {
    const framer = new LineFramer(100);
    expect(feed(framer, '{"a":', '1}\n{"b":2}\r\n\n  \n{"c"', ':3}\n{"d"')).toEqual([
      { kind: 'line', text: '{"a":1}' },
      { kind: 'line', text: '{"b":2}' },
      { kind: 'line', text: '{"c":3}' },
    ]);
    expect(framer.pendingBytes).toBe(4);
  });

  it('keeps multi-byte characters split between chunks intact', () => {
    const framer = new LineFramer(100);
    const bytes = Buffer.from('"é€😀"\n', 'utf8');
    const lines = [...bytes].flatMap((byte) => framer.push(Buffer.from([byte])));
    expect(lines).toEqual([{ kind: 'line', text: '"é€😀"' }]);
  });

  it('accepts a line of exactly the limit, also with a CRLF ending', () => {
    const framer = new LineFramer(10);
    expect(feed(framer, `${'x'.repeat(10)}\n`, `${'y'.repeat(10)}\r\n`)).toEqual([
      { kind: 'line', text: 'x'.repeat(10) },
      { kind: 'line', text: 'y'.repeat(10) },
    ]);
  });

  it('skips a line over the limit without holding it, reports its size and ends, and reads the next line', () => {
    const framer = new LineFramer(1000);
    const head = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"pad":"';
    const out: FramedLine[] = [];
    out.push(...feed(framer, head));
    for (let i = 0; i < 100; i += 1) {
      out.push(...feed(framer, 'z'.repeat(10_000)));
      expect(framer.pendingBytes).toBe(0); // nothing of the oversized line is held
    }
    out.push(...feed(framer, '"}}\n{"next":true}\n'));
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ kind: 'oversized', bytes: head.length + 1_000_000 + 3 });
    const oversized = out[0] as Extract<FramedLine, { kind: 'oversized' }>;
    expect(oversized.head.startsWith(head)).toBe(true);
    expect(oversized.tail.endsWith('zz"}}')).toBe(true);
    expect(out[1]).toEqual({ kind: 'line', text: '{"next":true}' });
  });

  it('reports a line that arrives over the limit in one chunk', () => {
    const framer = new LineFramer(5);
    expect(feed(framer, 'abcdefgh\nok\n')).toEqual([
      { kind: 'oversized', bytes: 8, head: 'abcdefgh', tail: 'abcdefgh' },
      { kind: 'line', text: 'ok' },
    ]);
  });
});
