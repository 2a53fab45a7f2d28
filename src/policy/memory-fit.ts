/**
 * Which models Ollama can hold loaded together, learned from their sizes. Pure: app/residency.ts
 * feeds it what `ollama ps` and `ollama list` show and what became of the calls it sent.
 *
 * Ollama loads a model beside the others only when their sizes fit in its memory; otherwise the
 * request waits inside Ollama until a busy model is done. The server cannot ask how much memory
 * Ollama has, but `ollama ps` shows what Ollama held at once: the largest total of SIZE seen loaded
 * together is memory Ollama had (the budget). Sizes seen in `ollama ps` are known; a model never
 * seen loaded counts the size of its file in `ollama list`, a lower bound (loaded, it also holds
 * its context cache), so a fit that relies on it is a guess; a model of unknown size fits nowhere
 * beside another. A single model always loads (Ollama spills what does not fit onto the CPU).
 *
 * The budget only rises with what is seen loaded together, and falls again when a load is seen not
 * to fit: the models Ollama unloaded to make room for one (`afterPs`), or a model sent beside busy
 * ones whose answer never began (`afterMisfit`).
 */

/** What is known of a model's size once loaded. */
export interface ModelSize {
  readonly bytes: number;
  /** `seen`: `ollama ps` showed it loaded at that size; `at_least`: a lower bound (its file, or a load that did not fit). */
  readonly kind: 'seen' | 'at_least';
}

/** What the server has learned of Ollama's memory. */
export interface MemoryFacts {
  /** Bytes Ollama was seen holding in models loaded together, as lowered since (0: nothing seen yet). */
  readonly budget: number;
  /** The size `ollama ps` last showed for each model it listed. */
  readonly seen: ReadonlyMap<string, number>;
  /** Lower bounds raised by loads that did not fit, for models never seen loaded. */
  readonly atLeast: ReadonlyMap<string, number>;
}

export const NOTHING_LEARNED: MemoryFacts = { budget: 0, seen: new Map(), atLeast: new Map() };

/** The memory view a dispatch decision reads: the budget, and each model's size as known. */
export interface MemoryView {
  readonly budget: number;
  /** A model's size; undefined when unknown. */
  readonly sizeOf: (model: string) => ModelSize | undefined;
}

/** Do these models fit in memory together: `known` (every size seen), `guessed` (a lower bound counted), or `no`. */
type Fit = 'known' | 'guessed' | 'no';

/** A model's size from what was learned and the least its file weighs (`ollama list`), if known. */
export function sizeOf(facts: MemoryFacts, model: string, fileBytes: number | undefined): ModelSize | undefined {
  const seen = facts.seen.get(model);
  if (seen !== undefined) return { bytes: seen, kind: 'seen' };
  const raised = facts.atLeast.get(model);
  if (raised === undefined && fileBytes === undefined) return undefined;
  return { bytes: Math.max(raised ?? 0, fileBytes ?? 0), kind: 'at_least' };
}

/** Can `models` be loaded together? One model alone always can. */
export function fitOf(memory: MemoryView, models: readonly string[]): Fit {
  if (models.length <= 1) return 'known';
  let total = 0;
  let guessed = false;
  for (const model of models) {
    const size = memory.sizeOf(model);
    if (size === undefined) return 'no';
    total += size.bytes;
    if (size.kind !== 'seen') guessed = true;
  }
  if (total > memory.budget) return 'no';
  return guessed ? 'guessed' : 'known';
}

/** What `ollama ps` showed: each model's size in bytes (models whose size was unreadable are absent). */
interface PsSighting {
  readonly sizes: ReadonlyMap<string, number>;
  /**
   * The model whose load prompted the question, and the models believed loaded beside it that
   * `ollama ps` no longer shows: Ollama unloaded them to make room, so they did not fit with it.
   */
  readonly loadedFor?: { readonly model: string; readonly gone: readonly string[] };
}

/**
 * After `ollama ps`: its sizes are seen, and the budget rises to their total. When models believed
 * loaded are gone after a load (Ollama unloaded them to make room), what is loaded now plus the
 * largest of them did not fit: the budget falls below that (never below what is loaded now).
 */
export function afterPs(facts: MemoryFacts, sighting: PsSighting): MemoryFacts {
  const seen = new Map(facts.seen);
  const atLeast = new Map(facts.atLeast);
  let total = 0;
  for (const [model, bytes] of sighting.sizes) {
    seen.set(model, bytes);
    atLeast.delete(model);
    total += bytes;
  }
  let budget = Math.max(facts.budget, total);
  const loadedFor = sighting.loadedFor;
  if (loadedFor !== undefined && sighting.sizes.has(loadedFor.model)) {
    const goneSizes = loadedFor.gone.map((model) => facts.seen.get(model)).filter((bytes) => bytes !== undefined);
    if (goneSizes.length > 0) budget = Math.min(budget, total + Math.max(...goneSizes) - 1);
  }
  return { budget, seen, atLeast };
}

/**
 * `models` were sent to load together (the last one beside the others, which were busy) and its
 * answer never began within its start allowance: they did not fit. When every size was seen, the
 * memory has shrunk: the budget falls below their total. Otherwise a lower bound was too low: each
 * model never seen loaded is taken to be larger by what would have made the total overflow.
 */
export function afterMisfit(
  facts: MemoryFacts,
  models: readonly string[],
  fileBytesOf: (model: string) => number | undefined,
): MemoryFacts {
  const sizes = models.map((model) => ({ model, size: sizeOf(facts, model, fileBytesOf(model)) }));
  if (models.length <= 1 || sizes.some(({ size }) => size === undefined)) return facts;
  const total = sizes.reduce((sum, { size }) => sum + size!.bytes, 0);
  const guessed = sizes.filter(({ size }) => size!.kind === 'at_least');
  if (guessed.length === 0) return { ...facts, budget: Math.min(facts.budget, Math.max(0, total - 1)) };
  const gap = Math.max(1, facts.budget - total + 1);
  const atLeast = new Map(facts.atLeast);
  for (const { model, size } of guessed) atLeast.set(model, size!.bytes + gap);
  return { ...facts, atLeast };
}
