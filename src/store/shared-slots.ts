import { lstatSync, readdirSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { livenessOf, type ProcessId, type ProcessPlace, type ProcView } from '../policy/process-identity.js';
import { ensureDirSync } from './durable-fs.js';
import type { SelfIdentity } from './proc-reader.js';

/** The folder of the state dir holding the shared slots. */
export const SLOTS_DIR_NAME = 'slots';
/** Waiting for a slot polls after this, doubling up to {@link MAX_POLL_MS} (jittered). */
const FIRST_POLL_MS = 5;
const MAX_POLL_MS = 100;
/** Holders of taken slots are checked for liveness at most this often while calls wait. */
const RECLAIM_CHECK_MS = 1_000;
/** A slot whose holder cannot be read (not written by this server) is removed once this old. */
const UNREADABLE_SLOT_MAX_AGE_MS = 60_000;

/** Who holds a slot: the symlink's target, as JSON. */
export interface SlotHolder extends ProcessId, ProcessPlace {
  /** Epoch ms of the claim. */
  readonly at: number;
}

/** One slot as `ollama_health` shows it. */
export interface SlotView {
  readonly slot: number;
  readonly pid: number | null;
  readonly since: string | null;
  /** The host name of the holder (team mode: holders on other machines too). */
  readonly host: string | null;
  /** `unknown`: held from another host or pid namespace; `unreadable`: not a holder this server wrote. */
  readonly holder: 'this_server' | 'alive' | 'dead' | 'unknown' | 'unreadable';
}

/** Frees a slot. Calling it twice is harmless. */
export type ReleaseSharedSlot = () => void;

/** Thrown (as `granted`'s rejection) when a waiting request is aborted before it got a slot. */
export class SharedSlotAbortedError extends Error {
  readonly kind = 'slot_aborted';
  constructor() {
    super('aborted while waiting for a shared concurrency slot');
    this.name = 'SharedSlotAbortedError';
  }
}

interface Waiter {
  readonly grant: (release: ReleaseSharedSlot) => void;
  /** Epoch ms it started waiting. */
  readonly since: number;
}

/**
 * Where the slots live and how one is taken: the files of the state dir (one machine), or a
 * Redis shared by every server of a team (store/redis-slot-table.ts). SharedSlots keeps the
 * queue, the polling and the abort logic, the same for both.
 */
export interface SlotTable {
  /** OLLAMA_MCP_SHARED_CONCURRENCY. */
  readonly limit: number;
  /** Where the slots are, for messages: the slots dir, or the Redis URL without its password. */
  readonly location: string;
  /** Who shares the cap, for messages: `server processes` or `servers on every machine`. */
  readonly sharedBy: string;
  /** Take a free slot: its release (harmless twice), or null when all are taken. Throws when the slots cannot be used. */
  claim(): ReleaseSharedSlot | null | Promise<ReleaseSharedSlot | null>;
  /** Free the slots of holders known to be dead; how many were freed. */
  reclaim(): number | Promise<number>;
  /** Every slot held now, and who holds it. */
  view(): SlotView[] | Promise<SlotView[]>;
  /** Tell other servers this process's oldest call waits since `since` (null: none waits). */
  markWaiting(since: number | null): void;
  /** Whether a call of another server has waited since before `since` (it goes first). */
  olderWaiterElsewhere(since: number): boolean;
  /** At shutdown, after the runs ended: wait for their releases to be done. */
  idle?(): Promise<void>;
}

/** A process whose calls wait for a slot leaves `slots/waiting-<pid>`, naming it and since when its oldest call waits. */
const WAITING_PREFIX = 'waiting-';

interface CommonOptions {
  readonly warn: (message: string) => void;
  readonly clock?: () => number;
  readonly random?: () => number;
}

export interface FileSlotTableOptions {
  readonly telemetryDir: string;
  /** OLLAMA_MCP_SHARED_CONCURRENCY. */
  readonly limit: number;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  readonly warn: (message: string) => void;
  readonly clock?: () => number;
}

/** The slots in the state dir (`telemetryDir`...), or any other table (`table`: team mode's Redis). */
export type SharedSlotsOptions = (FileSlotTableOptions | { readonly table: SlotTable }) & CommonOptions;

/**
 * At most `limit` model processes across every server process sharing the slot table
 * (OLLAMA_MCP_SHARED_CONCURRENCY): the state dir's (FileSlotTable), or in team mode a Redis
 * (RedisSlotTable), so the cap holds across machines.
 *
 * Waiting: FIFO within this process; each call of a process takes its turn in order, polling the
 * table (5 ms doubling to 100 ms, jittered) and at once when a slot of this process is freed.
 * Across processes the table may let an older waiter of another server go first (the file table
 * does). Waiting ends on the caller's abort signal (cancel, timeout of a batch, shutdown).
 *
 * If the slots cannot be used (a read-only dir, Redis down), runs go ahead uncapped across
 * processes (the in-process limit still holds) and stderr says so once; `lastError` keeps it for
 * health. The cap holds again as soon as a claim works again.
 */
export class SharedSlots {
  readonly limit: number;
  readonly table: SlotTable;
  readonly #warn: (message: string) => void;
  readonly #clock: () => number;
  readonly #random: () => number;
  readonly #queue: Waiter[] = [];
  #held = 0;
  #timer: NodeJS.Timeout | undefined;
  #pollMs = FIRST_POLL_MS;
  #polling = false;
  #pollAgain = false;
  #lastError: string | null = null;

  constructor(options: SharedSlotsOptions) {
    this.#warn = options.warn;
    this.#clock = options.clock ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.table =
      'table' in options
        ? options.table
        : new FileSlotTable({
            ...options,
            clock: this.#clock,
            onUnusable: (error) => this.#fail(error, path.join(options.telemetryDir, SLOTS_DIR_NAME), 'server processes'),
          });
    this.limit = this.table.limit;
  }

  /** Calls of this process waiting for a shared slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Slots this process holds. */
  get heldHere(): number {
    return this.#held;
  }

  /** Why the slots could not be used, if they could not (runs then go ahead uncapped across processes). */
  get lastError(): string | null {
    return this.#lastError;
  }

  /** A place in line. `granted` rejects with SharedSlotAbortedError when `signal` aborts first. */
  request(signal?: AbortSignal): { granted: Promise<ReleaseSharedSlot>; position(): number } {
    if (signal?.aborted) return { granted: Promise.reject(new SharedSlotAbortedError()), position: () => 0 };
    let waiter!: Waiter;
    const granted = new Promise<ReleaseSharedSlot>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index !== -1) this.#queue.splice(index, 1);
        if (this.#queue.length === 0) this.#stopPolling();
        this.table.markWaiting(this.#queue[0]?.since ?? null);
        reject(new SharedSlotAbortedError());
      };
      waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        since: this.#clock(),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
    // First in line: try at once (a free slot is taken without a timer); else wait for the poll.
    if (this.#queue.length === 1) void this.#poll();
    else this.#schedulePoll();
    return { granted, position: () => this.#queue.indexOf(waiter) + 1 };
  }

  /** Every slot held now, and who holds it. */
  async view(): Promise<SlotView[]> {
    return this.table.view();
  }

  /** Take a free slot (null when all are taken); a no-op release (uncapped) when the table cannot be used. */
  async #claim(): Promise<ReleaseSharedSlot | null> {
    let release: ReleaseSharedSlot | null;
    try {
      release = await this.table.claim();
    } catch (error) {
      this.#fail(error);
      return noop;
    }
    if (this.#lastError !== null) {
      this.#lastError = null;
      this.#warn(
        `the shared concurrency slots at ${this.table.location} work again: the cap holds again (OLLAMA_MCP_SHARED_CONCURRENCY)`,
      );
    }
    return release && this.#releaser(release);
  }

  #releaser(release: ReleaseSharedSlot): ReleaseSharedSlot {
    this.#held += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= 1;
      release();
      if (this.#queue.length > 0) {
        this.#pollMs = FIRST_POLL_MS;
        void this.#poll();
      }
    };
  }

  /** Serve the queue in order while slots are free; one pass at a time (a table may answer asynchronously). */
  async #poll(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    this.#polling = true;
    try {
      do {
        this.#pollAgain = false;
        while (this.#queue.length > 0) {
          // A call of another server that has waited longer goes first: leave the free slot to it.
          if (this.table.olderWaiterElsewhere(this.#queue[0]!.since)) break;
          let release = await this.#claim();
          if (!release && (await this.table.reclaim()) > 0) release = await this.#claim();
          if (!release) break;
          const waiter = this.#queue.shift();
          // Every waiter gave up while the claim was under way: the slot goes back.
          if (!waiter) {
            release();
            break;
          }
          waiter.grant(release);
        }
      } while (this.#pollAgain && this.#queue.length > 0);
    } catch (error) {
      this.#warn(`the shared concurrency slots at ${this.table.location}: ${(error as Error).message}`);
    } finally {
      this.#polling = false;
    }
    this.table.markWaiting(this.#queue[0]?.since ?? null);
    if (this.#queue.length > 0) this.#schedulePoll();
    else this.#pollMs = FIRST_POLL_MS;
  }

  #schedulePoll(): void {
    if (this.#timer || this.#polling) return;
    const wait = this.#pollMs * (0.5 + this.#random());
    this.#pollMs = Math.min(MAX_POLL_MS, this.#pollMs * 2);
    this.#timer = setTimeout(() => void this.#poll(), wait);
  }

  #stopPolling(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pollMs = FIRST_POLL_MS;
  }

  /** `location` and `sharedBy`: the table's (given while the table is being built). */
  #fail(error: unknown, location = this.table.location, sharedBy = this.table.sharedBy): void {
    const first = this.#lastError === null;
    this.#lastError = `${location}: ${(error as Error).message}`;
    if (first) {
      this.#warn(
        `the shared concurrency slots cannot be used (${this.#lastError}): runs go ahead without the cap across ${sharedBy} (OLLAMA_MCP_SHARED_CONCURRENCY) until they can; the in-process limit still holds`,
      );
    }
  }
}

/**
 * The slots of one machine: slot `i` is the symlink `slots/<i>` in the state dir, whose target is
 * the holder (pid, start time, host, boot, pid namespace, as JSON): creating a symlink is atomic
 * and fails when it exists, so a claim is one `symlink` call, a release one `unlink`, and a look
 * at the holder one `readlink`; no file content can be torn.
 *
 * Across processes, close to FIFO: a process whose calls wait leaves `slots/waiting-<pid>` (its
 * oldest call's wait start), and a process leaves a free slot to another live one whose call has
 * waited longer, so the order is by wait start, to within a poll, not exact. A slot whose holder
 * is dead (the same liveness test as the orphan sweep: its pid is free or names a process that
 * started at another time) is reclaimed; one held from another host or pid namespace is never
 * judged from here.
 */
export class FileSlotTable implements SlotTable {
  readonly dir: string;
  readonly limit: number;
  readonly sharedBy = 'server processes';
  readonly #identity: SelfIdentity;
  readonly #proc: ProcView;
  readonly #warn: (message: string) => void;
  readonly #clock: () => number;
  readonly #held = new Set<string>();
  readonly #holder: Omit<SlotHolder, 'at'>;
  #lastReclaimCheck = -Infinity;
  /** The `since` of the waiting mark written, null when none is. */
  #markedSince: number | null = null;

  constructor(options: FileSlotTableOptions & { readonly onUnusable?: (error: unknown) => void }) {
    this.dir = path.join(options.telemetryDir, SLOTS_DIR_NAME);
    this.limit = options.limit;
    this.#identity = options.identity;
    this.#proc = options.proc;
    this.#warn = options.warn;
    this.#clock = options.clock ?? Date.now;
    const { self, place } = options.identity;
    this.#holder = { pid: self.pid, start: self.start, ...place };
    try {
      ensureDirSync(this.dir);
    } catch (error) {
      // Said at once (not only at the first claim); each claim tries again.
      options.onUnusable?.(error);
    }
    // A server that exits (even by an uncaught error) frees its slots; a killed one's are reclaimed.
    process.on('exit', () => {
      for (const file of this.#held) unlinkQuietly(file);
      if (this.#markedSince !== null) unlinkQuietly(path.join(this.dir, `${WAITING_PREFIX}${this.#holder.pid}`));
    });
  }

  get location(): string {
    return this.dir;
  }

  view(): SlotView[] {
    return viewSlots(this.dir, this.limit, this.#identity.place, this.#proc, this.#held);
  }

  claim(): ReleaseSharedSlot | null {
    const target = JSON.stringify({ ...this.#holder, at: this.#clock() } satisfies SlotHolder);
    for (let slot = 0; slot < this.limit; slot += 1) {
      const file = slotFile(this.dir, slot);
      try {
        symlinkSync(target, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw error;
      }
      this.#held.add(file);
      return () => {
        if (!this.#held.delete(file)) return;
        unlinkQuietly(file);
      };
    }
    return null;
  }

  /** Remove the slots of dead holders (at most once per RECLAIM_CHECK_MS). Returns how many. */
  reclaim(): number {
    const now = this.#clock();
    if (now - this.#lastReclaimCheck < RECLAIM_CHECK_MS) return 0;
    this.#lastReclaimCheck = now;
    let freed = 0;
    for (let slot = 0; slot < this.limit; slot += 1) {
      const file = slotFile(this.dir, slot);
      if (this.#held.has(file)) continue;
      const holder = readHolder(file);
      if (holder === 'free') continue;
      let dead: boolean;
      let who: string;
      if (holder === null) {
        dead = ageOf(file, now) > UNREADABLE_SLOT_MAX_AGE_MS;
        who = 'an unreadable holder';
      } else {
        dead = livenessOf(holder, this.#identity.place, this.#proc) === 'dead';
        who = `server pid ${holder.pid}, which is gone`;
      }
      if (!dead) continue;
      // Removed only if it still names the same holder: another process may have reclaimed and
      // re-taken it meanwhile (the window between this readlink and the unlink is microseconds).
      const before = holder === null ? null : JSON.stringify(holder);
      const again = readHolder(file);
      if (again === 'free' || (again !== null && JSON.stringify(again) !== before)) continue;
      if (unlinkQuietly(file)) {
        freed += 1;
        this.#warn(`shared concurrency slot ${slot} was held by ${who}: reclaimed`);
      }
    }
    return freed;
  }

  /**
   * Keep `slots/waiting-<pid>` in step with this process's oldest waiting call (removed when none
   * waits), so other servers can let it go first. Only touched while calls wait.
   */
  markWaiting(since: number | null): void {
    if (since === this.#markedSince) return;
    const file = path.join(this.dir, `${WAITING_PREFIX}${this.#holder.pid}`);
    if (this.#markedSince !== null) unlinkQuietly(file);
    this.#markedSince = null;
    if (since === null) return;
    try {
      symlinkSync(JSON.stringify({ ...this.#holder, at: since } satisfies SlotHolder), file);
      this.#markedSince = since;
    } catch {
      // Without the mark this server's calls only lose their turn across servers, never a slot.
    }
  }

  /** Whether a live server (judged as for the slots) has a call waiting since before `since` (ties: the lower pid). */
  olderWaiterElsewhere(since: number): boolean {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return false;
    }
    const mine = `${WAITING_PREFIX}${this.#holder.pid}`;
    for (const name of names) {
      if (!name.startsWith(WAITING_PREFIX) || name === mine) continue;
      const file = path.join(this.dir, name);
      const other = readHolder(file);
      if (other === 'free' || other === null) continue;
      const state = livenessOf(other, this.#identity.place, this.#proc);
      if (state === 'dead') unlinkQuietly(file); // left by a killed server
      if (state !== 'alive') continue;
      if (other.at < since || (other.at === since && other.pid < this.#holder.pid)) return true;
    }
    return false;
  }
}

function noop(): void {}

function slotFile(dir: string, slot: number): string {
  return path.join(dir, String(slot));
}

/**
 * The slots of `dir` held now, and by whom (read-only: `doctor` uses it too). `heldHere`: the
 * slot files this process holds.
 */
export function viewSlots(
  dir: string,
  limit: number,
  here: ProcessPlace,
  proc: ProcView,
  heldHere: ReadonlySet<string> = new Set(),
): SlotView[] {
  const views: SlotView[] = [];
  for (let slot = 0; slot < limit; slot += 1) {
    const file = slotFile(dir, slot);
    const holder = readHolder(file);
    if (holder === 'free') continue;
    if (holder === null) {
      views.push({ slot, pid: null, host: null, since: null, holder: 'unreadable' });
      continue;
    }
    const state = heldHere.has(file) ? 'this_server' : livenessOf(holder, here, proc);
    views.push({ slot, pid: holder.pid, host: holder.host, since: new Date(holder.at).toISOString(), holder: state });
  }
  return views;
}

/** The slot's holder; `free` when there is no slot file; null when it is not a holder this server writes. */
function readHolder(file: string): SlotHolder | 'free' | null {
  let target: string;
  try {
    target = readlinkSync(file);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'free' : null;
  }
  return parseHolder(target);
}

/** A holder as written by a server (JSON), or null when it is not one. */
export function parseHolder(target: string): SlotHolder | null {
  try {
    const value = JSON.parse(target) as Partial<SlotHolder> | null;
    if (
      value === null ||
      typeof value !== 'object' ||
      !Number.isSafeInteger(value.pid) ||
      !(value.start === null || Number.isSafeInteger(value.start)) ||
      typeof value.host !== 'string' ||
      !(value.boot === null || typeof value.boot === 'string') ||
      !(value.pidns === null || typeof value.pidns === 'string') ||
      typeof value.at !== 'number'
    ) {
      return null;
    }
    return value as SlotHolder;
  } catch {
    return null;
  }
}

function ageOf(file: string, now: number): number {
  try {
    return now - lstatSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function unlinkQuietly(file: string): boolean {
  try {
    unlinkSync(file);
    return true;
  } catch {
    return false;
  }
}
