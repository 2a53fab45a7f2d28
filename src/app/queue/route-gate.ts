import { DispatchAbortedError } from './dispatcher.js';
import type { QueueReason } from './queue-reason.js';

interface Waiter {
  readonly batch: { readonly id: string; readonly limit: number } | undefined;
  readonly enter: () => void;
}

/**
 * With several Ollama hosts, each host has its own queue, and each queue keeps its own limits: this
 * gate keeps them over all hosts together. At most `limit` attempts of this server are routed to a
 * host at once (OLLAMA_MCP_CONCURRENCY), and at most a batch's own limit of its jobs; more wait here,
 * in arrival order (one held back only by its batch's limit lets the next go by).
 */
export class RouteGate {
  readonly #limit: number;
  readonly #waiting: Waiter[] = [];
  readonly #batches = new Map<string, number>();
  #inside = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /**
   * Wait for room; resolves with the function that gives it back (harmless twice). Rejects with
   * DispatchAbortedError when `signal` aborts first. `reason` says why the attempt waits here meanwhile.
   */
  enter(
    batch: { readonly id: string; readonly limit: number } | undefined,
    signal: AbortSignal | undefined,
  ): { readonly entered: Promise<() => void>; reason(): QueueReason | null } {
    let waiter!: Waiter;
    const entered = new Promise<() => void>((resolve, reject) => {
      if (signal?.aborted) return reject(new DispatchAbortedError());
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index === -1) return;
        this.#waiting.splice(index, 1);
        reject(new DispatchAbortedError());
        this.#pump();
      };
      waiter = {
        batch,
        enter: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#take(batch));
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#pump();
    });
    return { entered, reason: () => this.#reasonOf(waiter) };
  }

  #fits(batch: Waiter['batch']): boolean {
    return batch === undefined || (this.#batches.get(batch.id) ?? 0) < batch.limit;
  }

  #pump(): void {
    for (const waiter of [...this.#waiting]) {
      if (this.#inside >= this.#limit) return;
      if (!this.#fits(waiter.batch)) continue;
      this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
      waiter.enter();
    }
  }

  #take(batch: Waiter['batch']): () => void {
    this.#inside += 1;
    if (batch !== undefined) this.#batches.set(batch.id, (this.#batches.get(batch.id) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#inside -= 1;
      if (batch !== undefined) {
        const left = (this.#batches.get(batch.id) ?? 1) - 1;
        if (left > 0) this.#batches.set(batch.id, left);
        else this.#batches.delete(batch.id);
      }
      this.#pump();
    };
  }

  #reasonOf(waiter: Waiter | undefined): QueueReason | null {
    const index = waiter === undefined ? -1 : this.#waiting.indexOf(waiter);
    if (index === -1) return null;
    if (this.#inside >= this.#limit) return { kind: 'concurrency', ahead: index };
    return { kind: 'batch' };
  }
}
