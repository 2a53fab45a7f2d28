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

/** A process whose calls wait for a slot leaves `slots/waiting-<pid>`, naming it and since when its oldest call waits. */
const WAITING_PREFIX = 'waiting-';

export interface SharedSlotsOptions {
  readonly telemetryDir: string;
  /** OLLAMA_MCP_SHARED_CONCURRENCY. */
  readonly limit: number;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  readonly warn: (message: string) => void;
  readonly clock?: () => number;
  readonly random?: () => number;
}

/**
 * At most `limit` model processes across every server process sharing the state dir
 * (OLLAMA_MCP_SHARED_CONCURRENCY). Slot `i` is the symlink `slots/<i>`, whose target is the
 * holder (pid, start time, host, boot, pid namespace, as JSON): creating a symlink is atomic and
 * fails when it exists, so a claim is one `symlink` call, a release one `unlink`, and a look at
 * the holder one `readlink`; no file content can be torn.
 *
 * Waiting: FIFO within this process. Across processes, close to FIFO: a process whose calls wait
 * leaves `slots/waiting-<pid>` (its oldest call's wait start), and a process leaves a free slot to
 * another live one whose call has waited longer; a waiter polls (5 ms doubling to 100 ms,
 * jittered), so the order is by wait start, to within a poll, not exact. A slot whose holder is dead (the same liveness
 * test as the orphan sweep: its pid is free or names a process that started at another time) is
 * reclaimed; one held from another host or pid namespace is never judged from here.
 * Waiting ends on the caller's abort signal (cancel, timeout of a batch, shutdown).
 *
 * If the slots cannot be used at all (a read-only dir), runs go ahead uncapped across processes
 * (the in-process limit still holds) and stderr says so once; `lastError` keeps it for health.
 */
export class SharedSlots {
  readonly dir: string;
  readonly limit: number;
  readonly #identity: SelfIdentity;
  readonly #proc: ProcView;
  readonly #warn: (message: string) => void;
  readonly #clock: () => number;
  readonly #random: () => number;
  readonly #queue: Waiter[] = [];
  readonly #held = new Set<string>();
  readonly #holder: Omit<SlotHolder, 'at'>;
  #timer: NodeJS.Timeout | undefined;
  #pollMs = FIRST_POLL_MS;
  #lastReclaimCheck = -Infinity;
  #lastError: string | null = null;
  /** The `since` of the waiting mark written, null when none is. */
  #markedSince: number | null = null;

  constructor(options: SharedSlotsOptions) {
    this.dir = path.join(options.telemetryDir, SLOTS_DIR_NAME);
    this.limit = options.limit;
    this.#identity = options.identity;
    this.#proc = options.proc;
    this.#warn = options.warn;
    this.#clock = options.clock ?? Date.now;
    this.#random = options.random ?? Math.random;
    const { self, place } = options.identity;
    this.#holder = { pid: self.pid, start: self.start, ...place };
    try {
      ensureDirSync(this.dir);
    } catch (error) {
      this.#fail(error);
    }
    // A server that exits (even by an uncaught error) frees its slots; a killed one's are reclaimed.
    process.on('exit', () => {
      for (const file of this.#held) unlinkQuietly(file);
      if (this.#markedSince !== null) unlinkQuietly(path.join(this.dir, `${WAITING_PREFIX}${this.#holder.pid}`));
    });
  }

  /** Calls of this process waiting for a shared slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Slots this process holds. */
  get heldHere(): number {
    return this.#held.size;
  }

  /** Why the slots could not be used, if they could not (runs then go ahead uncapped across processes). */
  get lastError(): string | null {
    return this.#lastError;
  }

  /** A place in line. `granted` rejects with SharedSlotAbortedError when `signal` aborts first. */
  request(signal?: AbortSignal): { granted: Promise<ReleaseSharedSlot>; position(): number } {
    if (signal?.aborted) return { granted: Promise.reject(new SharedSlotAbortedError()), position: () => 0 };
    if (this.#queue.length === 0 && !this.#olderWaiterElsewhere(this.#clock())) {
      const release = this.#claim();
      if (release) return { granted: Promise.resolve(release), position: () => 0 };
    }
    let waiter!: Waiter;
    const granted = new Promise<ReleaseSharedSlot>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index !== -1) this.#queue.splice(index, 1);
        if (this.#queue.length === 0) this.#stopPolling();
        this.#markWaiting();
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
    this.#markWaiting();
    this.#schedulePoll();
    return { granted, position: () => this.#queue.indexOf(waiter) + 1 };
  }

  /** Every slot held now, and who holds it. */
  view(): SlotView[] {
    return viewSlots(this.dir, this.limit, this.#identity.place, this.#proc, this.#held);
  }

  #slotFile(slot: number): string {
    return slotFile(this.dir, slot);
  }

  /** Take a free slot, or null when all are taken. Uncapped (a no-op release) when slots cannot be made. */
  #claim(): ReleaseSharedSlot | null {
    const target = JSON.stringify({ ...this.#holder, at: this.#clock() } satisfies SlotHolder);
    for (let slot = 0; slot < this.limit; slot += 1) {
      const file = this.#slotFile(slot);
      try {
        symlinkSync(target, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
        this.#fail(error);
        return noop;
      }
      this.#held.add(file);
      return this.#releaser(file);
    }
    return null;
  }

  #releaser(file: string): ReleaseSharedSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held.delete(file);
      unlinkQuietly(file);
      if (this.#queue.length > 0) {
        this.#pollMs = FIRST_POLL_MS;
        this.#poll();
      }
    };
  }

  /** Remove the slots of dead holders (at most once per RECLAIM_CHECK_MS). Returns how many. */
  #reclaim(): number {
    const now = this.#clock();
    if (now - this.#lastReclaimCheck < RECLAIM_CHECK_MS) return 0;
    this.#lastReclaimCheck = now;
    let freed = 0;
    for (let slot = 0; slot < this.limit; slot += 1) {
      const file = this.#slotFile(slot);
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

  #poll(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#queue.length > 0) {
      // A call of another server that has waited longer goes first: leave the free slot to it.
      if (this.#olderWaiterElsewhere(this.#queue[0]!.since)) break;
      let release = this.#claim();
      if (!release && this.#reclaim() > 0) release = this.#claim();
      if (!release) break;
      this.#queue.shift()!.grant(release);
    }
    this.#markWaiting();
    if (this.#queue.length > 0) this.#schedulePoll();
    else this.#pollMs = FIRST_POLL_MS;
  }

  /**
   * Keep `slots/waiting-<pid>` in step with this process's oldest waiting call (removed when none
   * waits), so other servers can let it go first. Only touched while calls wait.
   */
  #markWaiting(): void {
    const since = this.#queue[0]?.since ?? null;
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
  #olderWaiterElsewhere(since: number): boolean {
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

  #schedulePoll(): void {
    if (this.#timer) return;
    const wait = this.#pollMs * (0.5 + this.#random());
    this.#pollMs = Math.min(MAX_POLL_MS, this.#pollMs * 2);
    this.#timer = setTimeout(() => this.#poll(), wait);
  }

  #stopPolling(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pollMs = FIRST_POLL_MS;
  }

  #fail(error: unknown): void {
    const first = this.#lastError === null;
    this.#lastError = `${this.dir}: ${(error as Error).message}`;
    if (first) {
      this.#warn(
        `the shared concurrency slots cannot be used (${this.#lastError}): runs go ahead without the cap across server processes (OLLAMA_MCP_SHARED_CONCURRENCY); the in-process limit still holds`,
      );
    }
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
      views.push({ slot, pid: null, since: null, holder: 'unreadable' });
      continue;
    }
    const state = heldHere.has(file) ? 'this_server' : livenessOf(holder, here, proc);
    views.push({ slot, pid: holder.pid, since: new Date(holder.at).toISOString(), holder: state });
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
