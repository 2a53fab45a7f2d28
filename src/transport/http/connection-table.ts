/** Connections serving no request at most: in total, and from one remote address. */
export interface ConnectionCaps {
  readonly total: number;
  readonly perAddress: number;
}

export interface ConnectionLimits extends ConnectionCaps {
  /** Connections serving no request at any moment, at most: past it the oldest is closed at once. */
  readonly hard: number;
}

/**
 * The limits this process can afford: connections serving no request may hold at most half of its
 * open-file limit (`fdLimit`, when known), the rest being for model processes, state and log files.
 */
export function affordableLimits(wanted: ConnectionCaps, fdLimit: number | null): ConnectionLimits {
  const hard = fdLimit === null ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(fdLimit / 2));
  const total = Math.min(wanted.total, hard);
  return { total, perAddress: Math.min(wanted.perAddress, total), hard };
}

interface Entry {
  readonly address: string;
  /** When it was opened (the clock of the caller). */
  readonly openedAt: number;
  /** Requests in flight on it (a response not yet closed). */
  inFlight: number;
  /** Has it ever sent a complete request (its headers)? */
  spoke: boolean;
}

/**
 * Who may hold a connection, as pure bookkeeping (time passed in). The limits count the connections
 * that serve no request (silent, or idle between two). One serving a request is neither counted nor
 * ever closed for room: a request lasts past its headers only once it passed the checks (Host,
 * Origin, token), so a peer without the token cannot hold one, and a client may have as many calls
 * in flight as it likes.
 *
 * Past a cap, the connections that have had `graceMs` to send a request are closed, the oldest that
 * never sent one first, then the oldest idle one ({@link trim}): a burst of a client's connections
 * is not mistaken for silence before its requests are read, and a flood of silent sockets cannot lock
 * a client out. Past the hard limit the oldest is closed at once ({@link open}): the descriptors are
 * bounded whatever the grace.
 */
export class ConnectionTable<K> {
  readonly #limits: ConnectionLimits;
  readonly #graceMs: number;
  readonly #entries = new Map<K, Entry>();
  readonly #waitingFrom = new Map<string, number>();
  #waiting = 0;

  constructor(limits: ConnectionLimits, graceMs: number) {
    this.#limits = limits;
    this.#graceMs = graceMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Connections serving no request: all of them, or those from `address`. */
  waiting(address?: string): number {
    return address === undefined ? this.#waiting : (this.#waitingFrom.get(address) ?? 0);
  }

  /** Is a cap passed (then {@link trim} soon)? */
  get overCaps(): boolean {
    if (this.#waiting > this.#limits.total) return true;
    for (const count of this.#waitingFrom.values()) if (count > this.#limits.perAddress) return true;
    return false;
  }

  /** A new connection from `address`; returns the one closed to keep within the hard limit, if any. */
  open(key: K, address: string, now: number): K | null {
    let evicted: K | null = null;
    if (this.#waiting >= this.#limits.hard) {
      evicted = this.#oldestWaiting();
      if (evicted !== null) this.close(evicted);
    }
    this.#entries.set(key, { address, openedAt: now, inFlight: 0, spoke: false });
    this.#count(address, 1);
    return evicted;
  }

  /** A request arrived on it (its headers are complete). */
  requestBegan(key: K): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    if (entry.inFlight === 0) this.#count(entry.address, -1);
    entry.inFlight += 1;
    entry.spoke = true;
  }

  /** A response on it closed; true when no request is left in flight. */
  requestEnded(key: K): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.inFlight === 0) return false;
    entry.inFlight -= 1;
    if (entry.inFlight === 0) this.#count(entry.address, 1);
    return entry.inFlight === 0;
  }

  close(key: K): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    if (entry.inFlight === 0) this.#count(entry.address, -1);
  }

  /** The connections to close (already forgotten here) to keep within the caps, among those that had their grace. */
  trim(now: number): K[] {
    const candidates = [...this.#entries]
      .filter(([, e]) => e.inFlight === 0 && now - e.openedAt >= this.#graceMs)
      .sort(([, a], [, b]) => Number(a.spoke) - Number(b.spoke) || a.openedAt - b.openedAt);
    const closed: K[] = [];
    for (const [key, entry] of candidates) {
      if (this.#waiting <= this.#limits.total && this.waiting(entry.address) <= this.#limits.perAddress) continue;
      this.close(key);
      closed.push(key);
    }
    return closed;
  }

  /** The oldest connection serving no request: one that never sent a request first. */
  #oldestWaiting(): K | null {
    let idle: K | null = null;
    for (const [key, entry] of this.#entries) {
      if (entry.inFlight > 0) continue;
      if (!entry.spoke) return key; // the map keeps the order of opening
      idle ??= key;
    }
    return idle;
  }

  #count(address: string, delta: 1 | -1): void {
    this.#waiting += delta;
    const count = (this.#waitingFrom.get(address) ?? 0) + delta;
    if (count > 0) this.#waitingFrom.set(address, count);
    else this.#waitingFrom.delete(address);
  }
}
