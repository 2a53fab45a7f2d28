import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { SessionTable, type Session } from '../../../../src/transport/http/sessions.js';

/** A table on a clock the test moves, with sessions whose server records being closed. */
function table(maxSessions: number) {
  let now = 1_000_000;
  const logs: string[] = [];
  const closed: string[] = [];
  const sessions = new SessionTable(
    maxSessions,
    (m) => logs.push(m),
    () => now,
  );
  const open = (id: string): Session => {
    const server = { close: async () => void closed.push(id) } as unknown as Server;
    const res = response();
    const session = sessions.add(id, {} as StreamableHTTPServerTransport, server, res);
    res.emit('close'); // the initialize reply was sent
    return session;
  };
  return {
    sessions,
    logs,
    closed,
    open,
    advance: (ms: number) => void (now += ms),
  };
}

function response(): ServerResponse {
  return new EventEmitter() as unknown as ServerResponse;
}

describe('SessionTable', () => {
  it('has room below the limit; a reservation (a session being opened) counts against it until released', async () => {
    const t = table(2);
    t.open('a');
    const opening = await t.sessions.reserve();
    expect(opening).not.toBeNull();
    expect(t.closed).toEqual([]);
    // a + the one being opened fill the table: the next one makes room by closing a.
    expect(await t.sessions.reserve()).not.toBeNull();
    expect(t.closed).toEqual(['a']);
    // Both reservations are held and the table is empty of sessions: nothing to close, no room.
    expect(await t.sessions.reserve()).toBeNull();
    opening!();
    opening!(); // twice is once
    expect(await t.sessions.reserve()).not.toBeNull();
    expect(await t.sessions.reserve()).toBeNull();
  });

  it('when full of idle sessions, closes the one used longest ago at once, whatever its age', async () => {
    const t = table(3);
    t.open('a');
    t.advance(5);
    t.open('b');
    t.advance(5);
    t.open('c');
    const used = t.sessions.get('a')!;
    const res = response();
    t.sessions.track(used, res, 'request'); // a ping on `a`, answered: a is now the most recently used
    res.emit('close');
    expect(await t.sessions.reserve()).not.toBeNull();
    expect(t.closed).toEqual(['b']);
    expect(t.sessions.get('b')).toBeUndefined();
    expect(t.logs.at(-1)).toMatch(/^session b closed \(evicted: the session table is full/);
  });

  it('never closes a session with a request in flight, however old; none idle means no room', async () => {
    const t = table(2);
    const a = t.open('a');
    t.advance(60 * 60_000);
    const b = t.open('b');
    t.sessions.track(a, response(), 'request'); // a long call, still running
    t.sessions.track(b, response(), 'request');
    expect(t.sessions.evictionCandidate()).toBeUndefined();
    expect(await t.sessions.reserve()).toBeNull();
    expect(t.closed).toEqual([]);
  });

  it('prefers a session without a GET stream (its client is likely gone) to an older one listening', async () => {
    const t = table(2);
    const listening = t.open('listening');
    t.sessions.track(listening, response(), 'stream');
    t.advance(1_000);
    t.open('silent');
    expect(t.sessions.evictionCandidate()?.id).toBe('silent');
  });

  it('reaps sessions with nothing open once idle for the given time; a listening one stays', () => {
    const t = table(4);
    t.open('idle');
    const listening = t.open('listening');
    t.sessions.track(listening, response(), 'stream');
    t.advance(999);
    t.sessions.reapIdle(1_000);
    expect(t.closed).toEqual([]);
    t.advance(1);
    t.sessions.reapIdle(1_000);
    expect(t.closed).toEqual(['idle']);
  });
});
