import { SlotLimiter, type SlotRequest } from './slot-limiter.js';

/**
 * The concurrency slots: one of the model's own limit (when its tier sets one), then one of the
 * server's, in that order, so a model at its own limit never holds a server slot while it waits.
 */
export class ModelSlots {
  /** The server-wide limit (OLLAMA_MCP_CONCURRENCY). */
  readonly global: SlotLimiter;
  readonly #perModel = new Map<string, SlotLimiter>();

  constructor(globalLimit: number) {
    this.global = new SlotLimiter(globalLimit);
  }

  /** A place in line for `modelKey`, whose own limit is `modelLimit` (null: none). */
  request(modelKey: string, modelLimit: number | null, signal: AbortSignal | undefined): SlotRequest {
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
