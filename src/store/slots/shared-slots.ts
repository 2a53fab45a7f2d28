import { FileSlotTable, type FileSlotTableOptions } from './file-slot-table.js';
import { SlotAbortedError } from './slot-aborted-error.js';
import type { ReleaseSharedSlot, SlotTable, SlotView } from './slot-table.js';

// What the server's other layers take from here.
export type { ReleaseSharedSlot, SlotTable, SlotView } from './slot-table.js';

/** Waiting for a slot polls after this, doubling up to {@link MAX_POLL_MS} (jittered). */
const FIRST_POLL_MS = 5;
const MAX_POLL_MS = 100;

interface Waiter {
  readonly grant: (release: ReleaseSharedSlot) => void;
  /** Epoch ms it started waiting. */
  readonly since: number;
}

/** The slots in the state dir (`telemetryDir`...), or any other table (`table`: team mode's Redis). */
type SharedSlotsOptions = (FileSlotTableOptions | { readonly table: SlotTable }) & {
  readonly warn: (message: string) => void;
  readonly random?: () => number;
};

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
    this.#random = options.random ?? Math.random;
    let unusable: unknown = null;
    this.table =
      'table' in options ? options.table : new FileSlotTable({ ...options, onUnusable: (error) => (unusable = error) });
    this.limit = this.table.limit;
    if (unusable !== null) this.#fail(unusable);
  }

  /** Calls of this process waiting for a shared slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  get heldHere(): number {
    return this.#held;
  }

  /** Why the slots could not be used, if they could not (runs then go ahead uncapped across processes). */
  get lastError(): string | null {
    return this.#lastError;
  }

  /** A place in line. `granted` rejects with SlotAbortedError when `signal` aborts first. */
  request(signal?: AbortSignal): { granted: Promise<ReleaseSharedSlot>; position(): number } {
    if (signal?.aborted) return { granted: Promise.reject(new SlotAbortedError()), position: () => 0 };
    let waiter!: Waiter;
    const granted = new Promise<ReleaseSharedSlot>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index !== -1) this.#queue.splice(index, 1);
        if (this.#queue.length === 0) this.#stopPolling();
        this.table.markWaiting(this.#queue[0]?.since ?? null);
        reject(new SlotAbortedError());
      };
      waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        since: Date.now(),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
    // First in line: try at once (a free slot is taken without a timer); else wait for the poll.
    if (this.#queue.length === 1) void this.#poll();
    else this.#schedulePoll();
    return { granted, position: () => this.#queue.indexOf(waiter) + 1 };
  }

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
      return () => {}; // uncapped
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

  #fail(error: unknown): void {
    const first = this.#lastError === null;
    this.#lastError = `${this.table.location}: ${(error as Error).message}`;
    if (first) {
      this.#warn(
        `the shared concurrency slots cannot be used (${this.#lastError}): runs go ahead without the cap across ${this.table.sharedBy} (OLLAMA_MCP_SHARED_CONCURRENCY) until they can; the in-process limit still holds`,
      );
    }
  }
}
