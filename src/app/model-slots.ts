import { SlotLimiter, type SlotRequest } from './slot-limiter.js';
import type { SharedSlots } from '../store/shared-slots.js';

/**
 * The concurrency slots: one of the model's own limit (when its tier sets one), then one of the
 * server's, in that order, so a model at its own limit never holds a server slot while it waits;
 * then, when OLLAMA_MCP_SHARED_CONCURRENCY is set, one of the slots shared by every server process
 * (store/shared-slots.ts). Without it nothing is added to a request.
 */
export class ModelSlots {
  /** The server-wide limit (OLLAMA_MCP_CONCURRENCY). */
  readonly global: SlotLimiter;
  readonly #perModel = new Map<string, SlotLimiter>();
  readonly #shared: SharedSlots | null;

  constructor(globalLimit: number, shared: SharedSlots | null = null) {
    this.global = new SlotLimiter(globalLimit);
    this.#shared = shared;
  }

  /** A place in line for `modelKey`, whose own limit is `modelLimit` (null: none). */
  request(modelKey: string, modelLimit: number | null, signal: AbortSignal | undefined): SlotRequest {
    const local = this.#local(modelKey, modelLimit, signal);
    const shared = this.#shared;
    return shared === null ? local : oneThenAnother(local, () => shared.request(signal));
  }

  #local(modelKey: string, modelLimit: number | null, signal: AbortSignal | undefined): SlotRequest {
    if (modelLimit === null) return this.global.request(signal);
    let limiter = this.#perModel.get(modelKey);
    if (!limiter || limiter.limit !== modelLimit) {
      limiter = new SlotLimiter(modelLimit);
      this.#perModel.set(modelKey, limiter);
    }
    return oneThenAnother(limiter.request(signal), () => this.global.request(signal));
  }
}

/**
 * `first`, then (once it is granted) the slot `takeSecond` asks for: granted when both are, released
 * together; if the second is refused (aborted), the first is released. The position counts both lines.
 */
function oneThenAnother(first: SlotRequest, takeSecond: () => SlotRequest): SlotRequest {
  let second: SlotRequest | null = null;
  const granted = first.granted.then(async (releaseFirst) => {
    const request = takeSecond();
    second = request;
    try {
      const releaseSecond = await request.granted;
      return () => {
        releaseSecond();
        releaseFirst();
      };
    } catch (error) {
      releaseFirst();
      throw error;
    }
  });
  return { granted, position: () => first.position() + (second?.position() ?? 0) };
}
