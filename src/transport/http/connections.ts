import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { affordableLimits, ConnectionTable, type ConnectionCaps } from './connection-table.js';

// The TCP connections of the HTTP transport, before any request is read. Each one holds a file
// descriptor, and a connection that sends nothing meets no check (no Host, no token): without bounds,
// anyone who can connect exhausts the descriptors, and the next model process cannot be started.

/** A connection that has sent no request is closed after this long. */
const IDLE_CONNECTION_MS = 5_000;

/**
 * Past a cap, a connection is closed for room only once it has had this long to send its request:
 * a burst of a client's own connections waits on this server's event loop, not on the client. The
 * hard limit (half the open-file limit) closes the oldest at once, whatever its age.
 */
const ROOM_GRACE_MS = 10_000;

/** Connections closed for room or idleness are logged at most this often (one line with the counts). */
const LOG_EVERY_MS = 60_000;

/** This process's open-file limit (the soft one, `ulimit -n`) on Linux; null where it cannot be read. */
function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.slice('Max open files'.length).trim().split(/\s+/)[0]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : null;
  } catch {
    return null;
  }
}

/**
 * Hold every connection of `server` to the caps this process can afford (see ConnectionTable), and
 * close one that sends no request within IDLE_CONNECTION_MS of opening. A connection kept alive
 * between requests is left to the server's own keep-alive timeout, which it announces to the client
 * (`Keep-Alive: timeout=5`): closing it on a timer of ours would race a client reusing it, which then
 * sees ECONNRESET. Returns the number of open connections.
 */
export function guardConnections(
  server: HttpServer,
  wanted: ConnectionCaps,
  log: (message: string) => void,
): { readonly size: () => number } {
  const fdLimit = openFileLimit();
  const limits = affordableLimits(wanted, fdLimit);
  if (limits.total < wanted.total) {
    log(
      `at most ${limits.total} HTTP connections serving no request (not ${wanted.total}): this process may open ${fdLimit} files (ulimit -n), and model processes need theirs`,
    );
  }
  const table = new ConnectionTable<Socket>(limits, ROOM_GRACE_MS);
  const close = closedCount(
    log,
    `${limits.total} waiting, ${limits.perAddress} per address, ${IDLE_CONNECTION_MS / 1000} s without a request`,
  );
  const idleTimers = new Map<Socket, NodeJS.Timeout>();
  const stopIdleTimer = (socket: Socket) => {
    clearTimeout(idleTimers.get(socket));
    idleTimers.delete(socket);
  };
  let trimming: NodeJS.Timeout | null = null;
  const trimSoon = () => {
    if (trimming !== null || !table.overCaps) return;
    trimming = setTimeout(() => {
      trimming = null;
      for (const socket of table.trim(performance.now())) close(socket, 'past the caps');
      trimSoon(); // those still within their grace
    }, ROOM_GRACE_MS);
    trimming.unref();
  };
  server.on('connection', (socket: Socket) => {
    const evicted = table.open(socket, normalAddress(socket.remoteAddress), performance.now());
    if (evicted !== null) close(evicted, 'past the hard limit');
    idleTimers.set(socket, setTimeout(() => close(socket, 'idle'), IDLE_CONNECTION_MS).unref());
    socket.once('close', () => {
      stopIdleTimer(socket);
      table.close(socket);
    });
    trimSoon();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    table.requestBegan(socket);
    stopIdleTimer(socket);
    res.once('close', () => {
      table.requestEnded(socket);
      trimSoon();
    });
  });
  return { size: () => table.size };
}

/** `::ffff:127.0.0.1` and `127.0.0.1` are one address. */
function normalAddress(address: string | undefined): string {
  return (address ?? 'unknown').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

/** Closes connections, and says so on the log at most once a minute (a line sums those since the last). */
function closedCount(log: (message: string) => void, limits: string): (socket: Socket, why: string) => void {
  let counts = new Map<string, number>();
  let lastLogAt = Number.NEGATIVE_INFINITY;
  return (socket, why) => {
    socket.destroy();
    counts.set(why, (counts.get(why) ?? 0) + 1);
    const now = performance.now();
    if (now - lastLogAt < LOG_EVERY_MS) return;
    lastLogAt = now;
    const said = [...counts].map(([reason, count]) => `${count} ${reason}`).join(', ');
    counts = new Map();
    log(`closed HTTP connections serving no request: ${said} (limits: ${limits}); the next line sums a minute's`);
  };
}
