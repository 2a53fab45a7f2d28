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
    if (shared === null) return local;
    let across: { position(): number } | null = null;
    const granted = local.granted.then(async (releaseLocal) => {
      const request = shared.request(signal);
      across = request;
      try {
        const releaseShared = await request.granted;
        return () => {
          releaseShared();
          releaseLocal();
        };
      } catch (error) {
        releaseLocal();
        throw error;
      }
    });
    return { granted, position: () => local.position() + (across?.position() ?? 0) };
  }

  #local(modelKey: string, modelLimit: number | null, signal: AbortSignal | undefined): SlotRequest {
    if (modelLimit === null) return this.global.request(signal);
    let limiter = this.#perModel.get(modelKey);
    if (!limiter || limiter.limit !== modelLimit) {
      limiter = new SlotLimiter(modelLimit);
      this.#perModel.set(modelKey, limiter);
    }
    const model = limiter.request(signal);
    let global: SlotRequest | null = null;
    const granted = model.granted.then(async (releaseModel) => {
      global = this.global.request(signal);
      try {
        const releaseGlobal = await global.granted;
        return () => {
          releaseGlobal();
          releaseModel();
        };
      } catch (error) {
        releaseModel();
        throw error;
      }
    });
    return { granted, position: () => model.position() + (global?.position() ?? 0) };
  }
}
