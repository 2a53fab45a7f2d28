/** Frees a slot taken from a SlotLimiter. Calling it twice is harmless. */
export type ReleaseSlot = () => void;

interface Waiter {
  readonly grant: (release: ReleaseSlot) => void;
}

/** A place in the queue: the slot arrives through `granted`; `position()` is 1 for the next in line, 0 once granted. */
export interface SlotRequest {
  readonly granted: Promise<ReleaseSlot>;
  position(): number;
}

/** Thrown (as the `granted` rejection) when a waiting request is aborted before it got a slot. */
export class SlotAbortedError extends Error {
  readonly kind = 'slot_aborted';
  constructor() {
    super('aborted while waiting for a concurrency slot');
    this.name = 'SlotAbortedError';
  }
}

/**
 * At most `limit` holders at once; later requests wait in FIFO order. An aborted waiter leaves
 * the queue at once and never takes a slot. Pure in-process bookkeeping: no timers, no I/O.
 */
export class SlotLimiter {
  readonly #limit: number;
  readonly #queue: Waiter[] = [];
  #running = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new TypeError(`Expected \`limit\` to be a whole number from 1 and up, got \`${limit}\``);
    }
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }
  /** Slots held now. */
  get running(): number {
    return this.#running;
  }
  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  request(signal?: AbortSignal): SlotRequest {
    if (signal?.aborted) return { granted: Promise.reject(new SlotAbortedError()), position: () => 0 };
    if (this.#running < this.#limit) {
      this.#running += 1;
      return { granted: Promise.resolve(this.#releaser()), position: () => 0 };
    }
    let waiter!: Waiter;
    const granted = new Promise<ReleaseSlot>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index !== -1) this.#queue.splice(index, 1);
        reject(new SlotAbortedError());
      };
      waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
    return { granted, position: () => this.#queue.indexOf(waiter) + 1 };
  }

  #releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      if (next) next.grant(this.#releaser());
      else this.#running -= 1;
    };
  }
}
