import type { ServerResponse } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** When the table is full, a session idle at least this long is closed to make room. */
const EVICTABLE_IDLE_MS = 60_000;

export interface Session {
  readonly id: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** HTTP responses still open for this session (in-flight POSTs, the GET stream). */
  openResponses: number;
  lastActive: number;
}

/**
 * The live MCP sessions of the HTTP transport: at most `maxSessions` (sessions being opened
 * count too), busy ones never closed, idle ones reaped or evicted to make room.
 */
export class SessionTable {
  readonly #sessions = new Map<string, Session>();
  readonly #maxSessions: number;
  readonly #log: (message: string) => void;
  #opening = 0;

  constructor(maxSessions: number, log: (message: string) => void) {
    this.#maxSessions = maxSessions;
    this.#log = log;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  /** A session is being opened: it counts against the limit until the returned function is called. */
  reserve(): () => void {
    this.#opening += 1;
    let released = false;
    return () => {
      if (!released) this.#opening -= 1;
      released = true;
    };
  }

  add(session: Session, res: ServerResponse): void {
    this.#sessions.set(session.id, session);
    this.track(session, res);
    this.#log(`session ${session.id} opened; ${this.#sessions.size} open`);
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

  /** Room for one more session? Closes the longest-idle one when the table is full and it has been idle a while. */
  async makeRoom(): Promise<boolean> {
    if (this.#sessions.size + this.#opening < this.#maxSessions) return true;
    const now = Date.now();
    let victim: Session | undefined;
    for (const session of this.#sessions.values()) {
      if (session.openResponses > 0 || now - session.lastActive < EVICTABLE_IDLE_MS) continue;
      if (!victim || session.lastActive < victim.lastActive) victim = session;
    }
    if (!victim) return false;
    await this.close(victim, 'evicted: session table full');
    return this.#sessions.size + this.#opening < this.#maxSessions;
  }

  /** Count a response as open for the session until it ends, so busy sessions are never reaped. */
  track(session: Session, res: ServerResponse): void {
    session.openResponses += 1;
    session.lastActive = Date.now();
    res.once('close', () => {
      session.openResponses -= 1;
      session.lastActive = Date.now();
    });
  }

  /** Close sessions with no open response for `idleMs`. */
  reapIdle(idleMs: number): void {
    const now = Date.now();
    for (const session of this.#sessions.values()) {
      if (session.openResponses === 0 && now - session.lastActive >= idleMs) {
        void this.close(session, `idle for ${Math.round((now - session.lastActive) / 1000)} s`);
      }
    }
  }
}
