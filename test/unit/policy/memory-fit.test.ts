import { describe, expect, it } from 'vitest';
import {
  afterMisfit,
  afterPs,
  fitOf,
  NOTHING_LEARNED,
  sizeOf,
  type MemoryFacts,
  type MemoryView,
} from '../../../src/policy/memory-fit.js';

const GB = 1e9;
const sizes = (gb: Record<string, number>) => new Map(Object.entries(gb).map(([model, n]) => [model, n * GB]));
const noFiles = () => undefined;

/** The view a dispatch decision reads, with the files `ollama list` shows (GB). */
function viewOf(facts: MemoryFacts, files: Record<string, number> = {}): MemoryView {
  return {
    budget: facts.budget,
    sizeOf: (model) => sizeOf(facts, model, files[model] === undefined ? undefined : files[model] * GB),
  };
}

describe('what fits in Ollama, learned from sizes', () => {
  it('learns the memory from the models `ollama ps` shows together, not from how many they are', () => {
    // An LLM beside the small embedding model of a RAG app: two models, but room for one big one.
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ llm: 4.9, embed: 0.3 }) });
    expect(facts.budget).toBe(5.2 * GB);
    expect(fitOf(viewOf(facts, { other: 4.7 }), ['llm', 'other'])).toBe('no');
    expect(fitOf(viewOf(facts), ['llm', 'embed'])).toBe('known');
  });

  it('one model alone always fits; a model of unknown size fits beside nothing; nothing seen, nothing fits together', () => {
    expect(fitOf(viewOf(NOTHING_LEARNED), ['anything'])).toBe('known');
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 2, b: 2 }) });
    expect(fitOf(viewOf(facts), ['a', 'unknown'])).toBe('no');
    expect(fitOf(viewOf(NOTHING_LEARNED, { a: 1, b: 1 }), ['a', 'b'])).toBe('no');
  });

  it("counts a model never seen loaded at its file's size, and calls the fit a guess", () => {
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 3, small: 2.8 }) });
    expect(fitOf(viewOf(facts, { c: 2.65 }), ['a', 'c'])).toBe('guessed');
    // Once `ollama ps` has shown it, its real size counts (a loaded model is larger than its file).
    const seen = afterPs(facts, { sizes: sizes({ c: 3.2 }) });
    expect(fitOf(viewOf(seen, { c: 2.65 }), ['a', 'c'])).toBe('no');
  });

  it('a guess that did not fit makes the model count as larger, so it is not sent beside them again', () => {
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 3, small: 2.8 }) });
    const files = (model: string) => (model === 'c' ? 2.65 * GB : undefined);
    const after = afterMisfit(facts, ['a', 'c'], files);
    expect(after.budget).toBe(facts.budget); // the memory seen is still right: the guess was not
    expect(fitOf(viewOf(after, { c: 2.65 }), ['a', 'c'])).toBe('no');
    expect(sizeOf(after, 'c', 2.65 * GB)?.kind).toBe('at_least');
  });

  it('sizes that were all seen and still did not fit mean the memory shrank: the budget falls below them', () => {
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 4, b: 4 }) });
    expect(fitOf(viewOf(facts), ['a', 'b'])).toBe('known');
    const after = afterMisfit(facts, ['a', 'b'], noFiles);
    expect(after.budget).toBeLessThan(8 * GB);
    expect(fitOf(viewOf(after), ['a', 'b'])).toBe('no');
    // It rises again when `ollama ps` shows them together.
    expect(afterPs(after, { sizes: sizes({ a: 4, b: 4 }) }).budget).toBe(8 * GB);
  });

  it('falls when Ollama unloaded models believed loaded to make room for a load', () => {
    // a, b and d were seen together (12 GB); the memory then shrank, and loading c (3 GB) unloaded a.
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 4, b: 4, d: 4 }) });
    const after = afterPs(facts, { sizes: sizes({ b: 4, c: 3 }), loadedFor: { model: 'c', gone: ['a'] } });
    // b + c + a (11 GB) did not fit: no set as large goes together again; what is loaded does.
    expect(after.budget).toBe(11 * GB - 1);
    expect(fitOf(viewOf(after), ['a', 'b', 'd'])).toBe('no');
    expect(fitOf(viewOf(after), ['b', 'c'])).toBe('known');
    // Nothing gone, or the loaded model not shown yet: no news about the memory.
    expect(afterPs(facts, { sizes: sizes({ c: 3 }), loadedFor: { model: 'c', gone: [] } }).budget).toBe(12 * GB);
    expect(afterPs(facts, { sizes: sizes({ b: 4 }), loadedFor: { model: 'c', gone: ['a'] } }).budget).toBe(12 * GB);
  });

  it('the budget never falls below what `ollama ps` shows loaded now', () => {
    const facts = afterPs(NOTHING_LEARNED, { sizes: sizes({ a: 4, b: 4 }) });
    const after = afterPs(facts, { sizes: sizes({ c: 7 }), loadedFor: { model: 'c', gone: ['a', 'b'] } });
    expect(after.budget).toBe(8 * GB);
  });
});
