import { lstatSync, readdirSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { livenessOf, type ProcView, type ProcessPlace } from '../../policy/process-identity.js';
import { ensureDirSync } from '../../config/telemetry-dir.js';
import { parseHolder, type Holder } from '../holder.js';
import type { SelfIdentity } from '../processes/proc-reader.js';
import { slotView, type ReleaseSharedSlot, type SlotTable, type SlotTableOptions, type SlotView } from './slot-table.js';

export const SLOTS_DIR_NAME = 'slots';
/** Holders of taken slots are checked for liveness at most this often while calls wait. */
const RECLAIM_CHECK_MS = 1_000;
/** A slot whose holder cannot be read (not written by this server) is removed once this old. */
const UNREADABLE_SLOT_MAX_AGE_MS = 60_000;
/** A process whose calls wait for a slot leaves `slots/waiting-<pid>`, naming it and since when its oldest call waits. */
const WAITING_PREFIX = 'waiting-';

export interface FileSlotTableOptions extends SlotTableOptions {
  readonly telemetryDir: string;
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
  readonly #held = new Set<string>();
  readonly #holder: Omit<Holder, 'at'>;
  #lastReclaimCheck = -Infinity;
  /** The `since` of the waiting mark written, null when none is. */
  #markedSince: number | null = null;

  constructor(options: FileSlotTableOptions & { readonly onUnusable?: (error: unknown) => void }) {
    this.dir = path.join(options.telemetryDir, SLOTS_DIR_NAME);
    this.limit = options.limit;
    this.#identity = options.identity;
    this.#proc = options.proc;
    this.#warn = options.warn;
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
    const target = JSON.stringify({ ...this.#holder, at: Date.now() } satisfies Holder);
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
        if (this.#held.delete(file)) unlinkQuietly(file);
      };
    }
    return null;
  }

  /** Remove the slots of dead holders (at most once per RECLAIM_CHECK_MS). Returns how many. */
  reclaim(): number {
    const checkedAt = performance.now(); // a clock that never steps
    if (checkedAt - this.#lastReclaimCheck < RECLAIM_CHECK_MS) return 0;
    this.#lastReclaimCheck = checkedAt;
    const now = Date.now();
    let freed = 0;
    for (let slot = 0; slot < this.limit; slot += 1) {
      const file = slotFile(this.dir, slot);
      if (this.#held.has(file)) continue;
      const holder = readHolder(file);
      if (holder === 'free') continue;
      const dead =
        holder === null
          ? ageOf(file, now) > UNREADABLE_SLOT_MAX_AGE_MS
          : livenessOf(holder, this.#identity.place, this.#proc) === 'dead';
      if (!dead) continue;
      // Removed only if it still names the same holder: another process may have reclaimed and re-taken it meanwhile.
      const again = readHolder(file);
      if (again === 'free' || (again !== null && JSON.stringify(again) !== JSON.stringify(holder))) continue;
      if (unlinkQuietly(file)) {
        freed += 1;
        const who = holder === null ? 'an unreadable holder' : `server pid ${holder.pid}, which is gone`;
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
      symlinkSync(JSON.stringify({ ...this.#holder, at: since } satisfies Holder), file);
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
    if (holder !== 'free') views.push(slotView(slot, holder, heldHere.has(file), here, proc));
  }
  return views;
}

/** The slot's holder; `free` when there is no slot file; null when it is not a holder this server writes. */
function readHolder(file: string): Holder | 'free' | null {
  let target: string;
  try {
    target = readlinkSync(file);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'free' : null;
  }
  return parseHolder(target);
}

/** How far the file's mtime is from `now`, either way (a clock step can date it in the future). */
function ageOf(file: string, now: number): number {
  try {
    return Math.abs(now - lstatSync(file).mtimeMs);
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
