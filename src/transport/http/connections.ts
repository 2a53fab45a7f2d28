import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HTTP_CONNECTIONS } from '../../config/ranges.js';
import { ConnectionTable, type ConnectionLimits } from './connection-table.js';

// The TCP connections of the HTTP transport, before any request is read. Each one holds a file
// descriptor, and a connection that sends nothing meets no check (no Host, no token): without bounds,
// anyone who can connect exhausts the descriptors, and the next model process cannot be started.

/** The defaults of OLLAMA_MCP_HTTP_MAX_CONNECTIONS and OLLAMA_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS. */
export const DEFAULT_CONNECTION_CAPS = HTTP_CONNECTIONS;

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
export function openFileLimit(): number | null {
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

interface GuardOptions {
  readonly limits: ConnectionLimits;
  /** @default IDLE_CONNECTION_MS */
  readonly idleMs?: number;
  readonly log: (message: string) => void;
}

/**
 * Hold every connection of `server` to the limits (see ConnectionTable), and close one that sends no
 * request within `idleMs` of opening. A connection kept alive between requests is left to the
 * server's own keep-alive timeout, which it announces to the client (`Keep-Alive: timeout=5`):
 * closing it on a timer of ours would race a client reusing it, which then sees ECONNRESET.
 * Returns the number of open connections.
 */
export function guardConnections(server: HttpServer, options: GuardOptions): { readonly size: () => number } {
  const table = new ConnectionTable<Socket>(options.limits, ROOM_GRACE_MS);
  const idleMs = options.idleMs ?? IDLE_CONNECTION_MS;
  const { total, perAddress } = options.limits;
  const closed = new ClosedCount(
    options.log,
    `${total} waiting, ${perAddress} per address, ${idleMs / 1000} s without a request`,
  );
  const idle = new IdleTimers(idleMs, (socket) => closed.close(socket, 'idle'));
  let trimming: NodeJS.Timeout | null = null;
  const trimSoon = () => {
    if (trimming !== null || !table.overCaps) return;
    trimming = setTimeout(() => {
      trimming = null;
      for (const socket of table.trim(performance.now())) closed.close(socket, 'past the caps');
      trimSoon(); // those still within their grace
    }, ROOM_GRACE_MS);
    trimming.unref();
  };
  server.on('connection', (socket: Socket) => {
    const evicted = table.open(socket, normalAddress(socket.remoteAddress), performance.now());
    if (evicted !== null) closed.close(evicted, 'past the hard limit');
    idle.start(socket);
    socket.once('close', () => {
      idle.stop(socket);
      table.close(socket);
    });
    trimSoon();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    table.requestBegan(socket);
    idle.stop(socket);
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

/** One timer per connection serving no request: it closes the connection when it fires. */
class IdleTimers {
  readonly #timers = new Map<Socket, NodeJS.Timeout>();

  constructor(
    private readonly idleMs: number,
    private readonly onIdle: (socket: Socket) => void,
  ) {}

  start(socket: Socket): void {
    this.stop(socket);
    const timer = setTimeout(() => this.onIdle(socket), this.idleMs);
    timer.unref();
    this.#timers.set(socket, timer);
  }

  stop(socket: Socket): void {
    clearTimeout(this.#timers.get(socket));
    this.#timers.delete(socket);
  }
}

/** Closes connections, and says so on the log at most once a minute (a line sums those since the last). */
class ClosedCount {
  #counts = new Map<string, number>();
  #lastLogAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: (message: string) => void,
    private readonly limits: string,
  ) {}

  close(socket: Socket, why: string): void {
    socket.destroy();
    this.#counts.set(why, (this.#counts.get(why) ?? 0) + 1);
    const now = performance.now();
    if (now - this.#lastLogAt < LOG_EVERY_MS) return;
    this.#lastLogAt = now;
    const said = [...this.#counts].map(([reason, count]) => `${count} ${reason}`).join(', ');
    this.#counts = new Map();
    this.log(`closed HTTP connections serving no request: ${said} (limits: ${this.limits}); the next line sums a minute's`);
  }
}
