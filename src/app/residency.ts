import type { LoadedModelsResult } from '../ollama/loaded-models.js';

/** `ollama ps` is asked again only when what it said is older than this and a choice depends on it. */
export const PS_FRESH_MS = 5_000;

export interface ResidencyOptions {
  /** Models Ollama keeps loaded together; null: learned, the most `ollama ps` has shown at once (1 until then). */
  readonly capacity: number | null;
  /** How long Ollama keeps an idle model loaded when a call does not say (OLLAMA_KEEP_ALIVE; Infinity: forever). */
  readonly keepAliveMs: number;
  /** ms, monotonic. */
  readonly clock: () => number;
  /** `ollama ps`, parsed; never rejects. null: none (the view is this server's own dispatches). */
  readonly readLoaded: (() => Promise<LoadedModelsResult>) | null;
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
 * last said, kept up to date by this server's own dispatches and by the keep-alive of idle models.
 * `ollama ps` is asked when the view is stale and a choice depends on it; if it fails, hangs or prints
 * something unexpected, the view goes on from this server's own dispatches, and stderr says so once.
 */
export class Residency {
  readonly #options: ResidencyOptions;
  readonly #loaded = new Map<string, Entry>();
  #learnedCapacity = 1;
  #askedAt = -Infinity;
  #asking: Promise<void> | null = null;
  #failing = false;

  constructor(options: ResidencyOptions) {
    this.#options = options;
  }

  /** Models Ollama keeps loaded together, as set or learned. */
  get capacity(): number {
    return this.#options.capacity ?? this.#learnedCapacity;
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

  /** A call of `model` was sent to Ollama, asking to keep it loaded `keepAliveMs` (undefined: Ollama's default). */
  started(model: string, keepAliveMs: number | undefined, evicted: string | undefined): void {
    if (evicted !== undefined) this.#loaded.delete(evicted);
    this.#touch(model, keepAliveMs ?? this.#loaded.get(model)?.keepAliveMs ?? this.#options.keepAliveMs);
  }

  /** A call of `model` ended: its keep-alive runs from now. */
  finished(model: string): void {
    const entry = this.#loaded.get(model);
    if (entry !== undefined) entry.lastUsed = this.#options.clock();
  }

  /** Ask `ollama ps` unless its last answer is fresh or a question is under way. */
  refreshIfStale(): void {
    if (this.#options.clock() - this.#askedAt < PS_FRESH_MS) return;
    this.#refresh();
  }

  /**
   * A model has just been loaded: when how many models fit together is learned, ask `ollama ps` now
   * (unless a question is under way), since Ollama may have kept the others beside it.
   */
  loadedOne(): void {
    if (this.#options.capacity === null) this.#refresh();
  }

  #refresh(): void {
    const read = this.#options.readLoaded;
    if (read === null || this.#asking !== null) return;
    this.#askedAt = this.#options.clock();
    this.#asking = read()
      .then((result) => this.#observe(result))
      .finally(() => {
        this.#asking = null;
      });
  }

  /** Resolves when a question to `ollama ps` under way has been answered (for tests and shutdown). */
  async settled(): Promise<void> {
    await this.#asking;
  }

  #observe(result: LoadedModelsResult): void {
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
    const before = [this.capacity, ...this.#loaded.keys()].join('\n');
    this.#learnedCapacity = Math.max(this.#learnedCapacity, result.models.length);
    for (const model of [...this.#loaded.keys()]) if (!result.models.includes(model)) this.#loaded.delete(model);
    // Models this server did not load (another client's) count as the least recently used.
    const known = new Map(this.#loaded);
    this.#loaded.clear();
    const now = this.#options.clock();
    for (const model of result.models) {
      if (!known.has(model)) this.#loaded.set(model, { lastUsed: now, keepAliveMs: this.#options.keepAliveMs });
    }
    for (const [model, entry] of known) this.#loaded.set(model, entry);
    if ([this.capacity, ...this.#loaded.keys()].join('\n') !== before) this.#options.onChange();
  }

  #touch(model: string, keepAliveMs: number): void {
    this.#loaded.delete(model);
    this.#loaded.set(model, { lastUsed: this.#options.clock(), keepAliveMs });
  }
}
