import type { LoadedModelsResult } from '../../ollama/loaded-models.js';
import type { Room } from '../../policy/dispatch.js';
import { afterMisfit, afterPs, NOTHING_LEARNED, sizeOf, type MemoryFacts } from '../../policy/memory-fit.js';

/** `ollama ps` is asked again only when what it said is older than this and a choice depends on it. */
export const PS_FRESH_MS = 5_000;

interface ResidencyOptions {
  /** Models Ollama keeps loaded together, as the user set it; null: learned from sizes (policy/memory-fit.ts). */
  readonly capacity: number | null;
  /** The least a model's file weighs (`ollama list`'s SIZE, as last read); undefined when not known. Asks nothing. */
  readonly fileBytesOf: (model: string) => number | undefined;
  /** How long Ollama keeps an idle model loaded when a call does not say (OLLAMA_KEEP_ALIVE; Infinity: forever). */
  readonly keepAliveMs: number;
  /** ms, monotonic. */
  readonly clock: () => number;
  /**
   * `ollama ps`, parsed; never rejects. null: none (the view is this server's own dispatches).
   * `fresh`: only an answer asked from now on will do (after a load); else a recent one will.
   */
  readonly readLoaded: ((fresh: boolean) => Promise<LoadedModelsResult>) | null;
  /** Told when `ollama ps` fails, once until it works again. */
  readonly warn: (message: string) => void;
  /** Told when `ollama ps` brought news (the dispatcher looks again). */
  readonly onChange: () => void;
}

interface Entry {
  /** When its last call ended, or started while none ended since (ms, monotonic). */
  lastUsed: number;
  /** How long Ollama keeps it once idle. */
  keepAliveMs: number;
}

/**
 * Which models this server believes Ollama has loaded, least recently used first: what `ollama ps`
 * last said, kept up to date by this server's own dispatches and by the keep-alive of idle models;
 * and, unless the user set how many fit, what fits together, learned from the sizes `ollama ps`
 * shows and from loads that did not fit (policy/memory-fit.ts). `ollama ps` is asked when the view is
 * stale and a choice depends on it, and after each load; if it fails, hangs or prints something
 * unexpected, the view goes on from this server's own dispatches, and stderr says so once.
 */
export class Residency {
  readonly #options: ResidencyOptions;
  readonly #loaded = new Map<string, Entry>();
  /** Calls of each model sent on and not yet finished. */
  readonly #calls = new Map<string, number>();
  #memory: MemoryFacts = NOTHING_LEARNED;
  #mostSeen = 1;
  #askedAt = -Infinity;
  #asking: Promise<void> | null = null;
  /** A load whose `ollama ps` must still be asked (one was under way when it was wanted). */
  #loadToCheck: string | null = null;
  #failing = false;

  constructor(options: ResidencyOptions) {
    this.#options = options;
  }

  /** Models Ollama keeps loaded together: as set, or learned, the most `ollama ps` has shown at once (for people). */
  get capacity(): number {
    return this.#options.capacity ?? this.#mostSeen;
  }

  /** The memory learned to hold models together, in bytes; null when the user set a count, or nothing was seen yet. */
  get memoryBudget(): number | null {
    return this.#options.capacity === null && this.#memory.budget > 0 ? this.#memory.budget : null;
  }

  /** How many models Ollama keeps loaded together, for the dispatch policy. */
  room(): Room {
    const { capacity, fileBytesOf } = this.#options;
    if (capacity !== null) return { kind: 'count', capacity };
    const memory = this.#memory;
    return { kind: 'memory', memory: { budget: memory.budget, sizeOf: (model) => sizeOf(memory, model, fileBytesOf(model)) } };
  }

  /** The models believed loaded now, least recently used first; `busy` ones (calls in flight here) always count. */
  loaded(busy: ReadonlySet<string>): string[] {
    const now = this.#options.clock();
    for (const [model, entry] of this.#loaded) {
      if (!busy.has(model) && now - entry.lastUsed > entry.keepAliveMs) this.#loaded.delete(model);
    }
    for (const model of busy) if (!this.#loaded.has(model)) this.#touch(model, this.#options.keepAliveMs);
    return [...this.#loaded.keys()];
  }

  /** A call of `model` was sent to Ollama, asking to keep it loaded `keepAliveMs` (undefined: Ollama's default); `evicted` make room for it. */
  started(model: string, keepAliveMs: number | undefined, evicted: readonly string[]): void {
    for (const gone of evicted) this.#loaded.delete(gone);
    this.#calls.set(model, (this.#calls.get(model) ?? 0) + 1);
    this.#touch(model, keepAliveMs ?? this.#loaded.get(model)?.keepAliveMs ?? this.#options.keepAliveMs);
  }

  /** A call of `model` ended: its keep-alive runs from now. */
  finished(model: string): void {
    const calls = (this.#calls.get(model) ?? 1) - 1;
    if (calls > 0) this.#calls.set(model, calls);
    else this.#calls.delete(model);
    const entry = this.#loaded.get(model);
    if (entry !== undefined) entry.lastUsed = this.#options.clock();
  }

  /** Ask `ollama ps` unless its last answer is fresh or a question is under way. */
  refreshIfStale(): void {
    if (this.#options.clock() - this.#askedAt < PS_FRESH_MS) return;
    this.#refresh(null, false);
  }

  /**
   * `model` has just been loaded: when what fits together is learned, ask `ollama ps` now (or once
   * the question under way is answered): it shows the model's size, and which models Ollama kept
   * beside it or unloaded to make room.
   */
  loadedOne(model: string): void {
    if (this.#options.capacity === null) this.#refresh(model);
  }

  /**
   * A call of `model`, sent while `beside` were busy, saw no answer begin within its start
   * allowance: its model is not loaded (killing the CLI aborts a load), and if it was sent beside
   * busy models, they did not fit together. Ask `ollama ps` again.
   */
  startTimedOut(model: string, beside: readonly string[]): void {
    this.#loaded.delete(model);
    if (this.#options.capacity === null && beside.length > 0) {
      this.#memory = afterMisfit(this.#memory, [...beside, model], this.#options.fileBytesOf);
    }
    this.#refresh(null);
  }

  #refresh(loadedFor: string | null, fresh = true): void {
    const read = this.#options.readLoaded;
    if (read === null) return;
    if (this.#asking !== null) {
      if (loadedFor !== null) this.#loadToCheck = loadedFor;
      return;
    }
    this.#askedAt = this.#options.clock();
    this.#asking = read(fresh)
      .then((result) => this.#observe(result, loadedFor))
      .finally(() => {
        this.#asking = null;
        const next = this.#loadToCheck;
        this.#loadToCheck = null;
        if (next !== null) this.#refresh(next);
      });
  }

  /** Resolves when the questions to `ollama ps` under way have been answered (for tests and shutdown). */
  async settled(): Promise<void> {
    while (this.#asking !== null) await this.#asking;
  }

  #observe(result: LoadedModelsResult, loadedFor: string | null): void {
    if (!result.ok) {
      if (!this.#failing) {
        this.#options.warn(
          `cannot read which models Ollama has loaded (${result.reason}); dispatching from this server's own runs until it can`,
        );
      }
      this.#failing = true;
      return;
    }
    this.#failing = false;
    const before = this.#describe();
    this.#learn(result, loadedFor);
    for (const model of [...this.#loaded.keys()]) if (!result.models.includes(model)) this.#loaded.delete(model);
    // Models this server did not load (another client's) count as the least recently used.
    const known = new Map(this.#loaded);
    this.#loaded.clear();
    const now = this.#options.clock();
    for (const model of result.models) {
      if (!known.has(model)) this.#loaded.set(model, { lastUsed: now, keepAliveMs: this.#options.keepAliveMs });
    }
    for (const [model, entry] of known) this.#loaded.set(model, entry);
    if (this.#describe() !== before) this.#options.onChange();
  }

  /**
   * What fits together, from the sizes `ollama ps` shows and, after a load, the models believed
   * loaded that it no longer shows (neither idle past their keep-alive, nor with a call of this
   * server under way: such a model is still queued or loading, not unloaded).
   */
  #learn(result: { readonly models: readonly string[]; readonly sizes: ReadonlyMap<string, number> }, loadedFor: string | null) {
    this.#mostSeen = Math.max(this.#mostSeen, result.models.length);
    const now = this.#options.clock();
    const unloaded = (model: string, entry: Entry) =>
      model !== loadedFor &&
      !result.models.includes(model) &&
      !this.#calls.has(model) &&
      now - entry.lastUsed <= entry.keepAliveMs;
    const gone = [...this.#loaded].filter(([model, entry]) => unloaded(model, entry)).map(([model]) => model);
    this.#memory = afterPs(this.#memory, {
      sizes: result.sizes,
      ...(loadedFor !== null ? { loadedFor: { model: loadedFor, gone } } : {}),
    });
  }

  /** What the dispatcher's choices depend on, to tell whether `ollama ps` brought news. */
  #describe(): string {
    return [this.capacity, this.#memory.budget, ...this.#loaded.keys()].join('\n');
  }

  #touch(model: string, keepAliveMs: number): void {
    this.#loaded.delete(model);
    this.#loaded.set(model, { lastUsed: this.#options.clock(), keepAliveMs });
  }
}
