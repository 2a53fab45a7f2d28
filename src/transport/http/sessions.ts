import type { ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface Session {
  readonly id: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** POST/DELETE responses still open: a call in flight. A session with one is busy and never closed for room. */
  openRequests: number;
  /** GET streams still open (the client listens for server messages, but asked nothing). */
  openStreams: number;
  /** When a response of this session last opened or closed. */
  lastActive: number;
}

/**
 * The live MCP sessions of the HTTP transport: at most `maxSessions` (sessions being opened count
 * too). A session is idle when no request of it is in flight. Clients often leave without
 * DELETE (a crash, a reconnect): when the table is full, the idle session used longest ago makes
 * room for a new one at once, so abandoned sessions never lock a client out. Busy ones are never
 * closed; idle ones with no stream either are also reaped after `idleMs`.
 */
export class SessionTable {
  readonly #sessions = new Map<string, Session>();
  readonly #maxSessions: number;
  readonly #log: (message: string) => void;
  readonly #now: () => number;
  #opening = 0;

  constructor(maxSessions: number, log: (message: string) => void, now: () => number = Date.now) {
    this.#maxSessions = maxSessions;
    this.#log = log;
    this.#now = now;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  /** Add the session opened by the initialize request whose response is `res`. */
  add(id: string, transport: StreamableHTTPServerTransport, server: Server, res: ServerResponse): Session {
    const session: Session = { id, transport, server, openRequests: 0, openStreams: 0, lastActive: this.#now() };
    this.#sessions.set(id, session);
    this.track(session, res, 'request');
    this.#log(`session ${id} opened; ${this.#sessions.size} open`);
    return session;
  }

  /** The session's transport closed on its own (the client ended it). */
  ended(session: Session): void {
    if (this.#sessions.get(session.id) !== session) return;
    this.#sessions.delete(session.id);
    this.#log(`session ${session.id} ended; ${this.#sessions.size} open`);
  }

  async close(session: Session, why: string): Promise<void> {
    if (!this.#sessions.delete(session.id)) return;
    this.#log(`session ${session.id} closed (${why}); ${this.#sessions.size} open`);
    // Server.close() closes the transport: in-flight handlers see their signal abort (runs are killed).
    await session.server.close().catch(() => {});
  }

  closeAll(why: string): Promise<void[]> {
    return Promise.all([...this.#sessions.values()].map((session) => this.close(session, why)));
  }

  /**
   * Room for one more session: a reservation that counts against the limit until released (the
   * session is added or failed to open), or null when every session is busy. When the table is
   * full, the idle session chosen by `evictionCandidate` is closed to give way.
   */
  async reserve(): Promise<(() => void) | null> {
    if (!this.#hasRoom()) {
      const victim = this.evictionCandidate();
      if (!victim) return null;
      await this.close(victim, 'evicted: the session table is full and it was the idle session used longest ago');
      if (!this.#hasRoom()) return null;
    }
    this.#opening += 1;
    let released = false;
    return () => {
      if (!released) this.#opening -= 1;
      released = true;
    };
  }

  /**
   * The session that gives way to a new one: never one with a call in flight; one without a GET
   * stream before one with (its client is likely gone); among those, the one used longest ago.
   */
  evictionCandidate(): Session | undefined {
    let victim: Session | undefined;
    for (const session of this.#sessions.values()) {
      if (session.openRequests > 0) continue;
      if (!victim || evictsBefore(session, victim)) victim = session;
    }
    return victim;
  }

  /**
   * Count a response as open for the session until it ends (a POST or DELETE awaiting its reply, or
   * the GET stream): a busy session is never closed for room or idleness.
   */
  track(session: Session, res: ServerResponse, kind: 'request' | 'stream'): void {
    const field = kind === 'request' ? 'openRequests' : 'openStreams';
    session[field] += 1;
    session.lastActive = this.#now();
    res.once('close', () => {
      session[field] -= 1;
      session.lastActive = this.#now();
    });
  }

  /** Close sessions with no open response at all for `idleMs`. */
  reapIdle(idleMs: number): void {
    const now = this.#now();
    for (const session of this.#sessions.values()) {
      if (session.openRequests === 0 && session.openStreams === 0 && now - session.lastActive >= idleMs) {
        void this.close(session, `idle for ${Math.round((now - session.lastActive) / 1000)} s`);
      }
    }
  }

  #hasRoom(): boolean {
    return this.#sessions.size + this.#opening < this.#maxSessions;
  }
}

function evictsBefore(a: Session, b: Session): boolean {
  const aListens = a.openStreams > 0;
  return aListens === b.openStreams > 0 ? a.lastActive < b.lastActive : !aListens;
}
