import { describe, expect, it } from 'vitest';
import { affordableLimits, ConnectionTable, type ConnectionLimits } from '../../../../src/transport/http/connection-table.js';

const GRACE = 1_000;
const limits = (total: number, perAddress: number, hard = Number.POSITIVE_INFINITY): ConnectionLimits => ({
  total,
  perAddress,
  hard,
});

/** A connection that sent a request, now answered: idle between two. */
function spoke(table: ConnectionTable<string>, key: string, address: string, at: number): void {
  table.open(key, address, at);
  table.requestBegan(key);
  table.requestEnded(key);
}

describe('ConnectionTable', () => {
  it('counts the connections serving no request, in total and per address', () => {
    const table = new ConnectionTable<string>(limits(3, 2), GRACE);
    table.open('a1', '10.0.0.1', 0);
    table.open('b1', '10.0.0.2', 0);
    table.open('a2', '10.0.0.1', 0);
    expect([table.size, table.waiting(), table.waiting('10.0.0.1'), table.overCaps]).toEqual([3, 3, 2, false]);
    table.requestBegan('a1');
    expect([table.waiting(), table.waiting('10.0.0.1')]).toEqual([2, 1]);
    table.close('b1');
    expect([table.size, table.waiting()]).toEqual([2, 1]);
  });

  it('past a cap, closes the oldest that never sent a request, once it had its grace to send one', () => {
    const table = new ConnectionTable<string>(limits(2, 10), GRACE);
    spoke(table, 'client', '127.0.0.1', 0); // idle between two requests, but a client that spoke
    table.open('silent1', '127.0.0.1', 10);
    table.open('silent2', '127.0.0.1', 20);
    expect(table.overCaps).toBe(true);
    expect(table.trim(500)).toEqual([]); // nobody had the time to send a request yet
    expect(table.trim(1_010)).toEqual(['silent1']);
    expect([table.size, table.overCaps]).toEqual([2, false]);
  });

  it("does not take a burst of a client's connections for silence: their requests arrive within the grace", () => {
    const table = new ConnectionTable<string>(limits(2, 2), GRACE);
    for (let i = 0; i < 50; i += 1) table.open(`call${i}`, '127.0.0.1', 0);
    expect(table.overCaps).toBe(true);
    for (let i = 0; i < 50; i += 1) table.requestBegan(`call${i}`);
    expect(table.overCaps).toBe(false);
    expect(table.trim(5_000)).toEqual([]);
    expect(table.size).toBe(50);
  });

  it('with no silent one past the cap, closes the oldest idle one; one serving a request never', () => {
    const table = new ConnectionTable<string>(limits(1, 1), GRACE);
    table.open('streaming', '127.0.0.1', 0);
    table.requestBegan('streaming');
    spoke(table, 'idle1', '127.0.0.1', 10);
    spoke(table, 'idle2', '127.0.0.1', 20);
    expect(table.trim(2_000)).toEqual(['idle1']);
    expect(table.size).toBe(2);
  });

  it('an address past its cap gives way only among its own connections', () => {
    const table = new ConnectionTable<string>(limits(10, 2), GRACE);
    table.open('other', '10.0.0.9', 0);
    table.open('x1', '10.0.0.1', 1);
    table.open('x2', '10.0.0.1', 2);
    table.open('x3', '10.0.0.1', 3);
    expect(table.trim(2_000)).toEqual(['x1']);
    expect(table.waiting('10.0.0.9')).toBe(1);
  });

  it('past the hard limit, the oldest connection serving no request is closed at once, grace or not', () => {
    const table = new ConnectionTable<string>(limits(2, 2, 3), GRACE);
    spoke(table, 'idle', '127.0.0.1', 0);
    table.open('silent1', '127.0.0.2', 1);
    table.open('silent2', '127.0.0.2', 2);
    expect(table.open('silent3', '127.0.0.2', 3)).toBe('silent1');
    expect(table.open('silent4', '127.0.0.2', 4)).toBe('silent2');
    expect(table.waiting()).toBe(3);
  });

  it('a request ended on a connection with another in flight leaves it serving', () => {
    const table = new ConnectionTable<string>(limits(1, 1), GRACE);
    table.open('c', '127.0.0.1', 0);
    table.requestBegan('c');
    table.requestBegan('c');
    expect(table.requestEnded('c')).toBe(false);
    expect(table.waiting()).toBe(0);
    expect(table.requestEnded('c')).toBe(true);
    expect(table.waiting()).toBe(1);
  });
});

describe('affordableLimits', () => {
  it('keeps the connections serving no request within half of the open-file limit', () => {
    const wanted = { total: 256, perAddress: 128 };
    expect(affordableLimits(wanted, null)).toEqual({ total: 256, perAddress: 128, hard: Number.POSITIVE_INFINITY });
    expect(affordableLimits(wanted, 20_000)).toEqual({ total: 256, perAddress: 128, hard: 10_000 });
    expect(affordableLimits(wanted, 200)).toEqual({ total: 100, perAddress: 100, hard: 100 });
    expect(affordableLimits({ total: 10, perAddress: 50 }, null)).toMatchObject({ total: 10, perAddress: 10 });
    expect(affordableLimits(wanted, 1)).toEqual({ total: 1, perAddress: 1, hard: 1 });
  });
});
