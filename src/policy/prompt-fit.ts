/**
 * Did a prompt fit the model's context window? Ollama cuts a prompt that does not fit silently
 * (only its server log says so); the one sign the CLI gives is `prompt eval count` (`--verbose`).
 * Pure: the numbers come in, a verdict goes out.
 *
 * What a cut prompt's count looks like, read off Ollama's source:
 * - up to v0.30.10 the runners keep exactly `num_ctx` tokens (num_keep, then the tail): the count
 *   sits AT the context size;
 * - from v0.30.11 llama-server keeps room to generate: `num_ctx - (num_ctx - n_keep) / 2` tokens,
 *   n_keep being num_keep (4 by default) plus the BOS token: the count sits at about HALF the
 *   context, on one exact value (llm/llama_server.go, contextShiftPromptLimit).
 * A prompt that fits but nearly fills the context is flagged too: the answer has no room, and
 * Ollama then shifts the context (drops half of the prompt) while generating.
 */

/** What is known of the model's context, from the CLI (see ollama/context-window.ts). */
export interface ContextEvidence {
  /** CONTEXT of the loaded model in `ollama ps` (v0.9.7 and later): the size it ran with. */
  readonly loaded: number | null;
  /** The model's `num_ctx` parameter (`ollama show`, a Modelfile's `PARAMETER num_ctx`). */
  readonly numCtx: number | null;
  /** The model's maximum (`context length` in `ollama show`). */
  readonly modelMax: number | null;
}

export const NO_EVIDENCE: ContextEvidence = Object.freeze({ loaded: null, numCtx: null, modelMax: null });

/** Where the context size of a verdict comes from. */
export type ContextSource = 'loaded' | 'num_ctx' | 'default';

export type PromptFit =
  | { readonly fits: true }
  | {
      readonly fits: false;
      readonly promptTokens: number;
      readonly contextSize: number;
      /** `full`: at or near the context size; `shifted`: the exact length v0.30.11+ cuts a prompt to. */
      readonly sign: 'full' | 'shifted';
      readonly source: ContextSource;
    };

/** A prompt at this share of the context or more leaves (almost) no room for the answer. */
const NEAR_FULL_SHARE = 0.95;
/**
 * Ollama's default context in its versions (2048 before v0.6.7, 4096 until v0.15.4, then 4k, 32k or
 * 256k by VRAM), tried when the model's real context could not be read: only an exact hit counts.
 */
const DEFAULT_CONTEXTS = [2048, 4096, 32768, 262144] as const;
/** num_keep's default (4), without and with the BOS token. */
const KEPT_TOKENS = [4, 5] as const;

/** The length llama-server (v0.30.11+) cuts a too-long prompt to, for a context and a num_keep. */
export function shiftedPromptLength(numCtx: number, nKeep: number): number {
  const keep = Math.max(0, Math.min(nKeep, numCtx - 1));
  return numCtx - Math.max(Math.floor((numCtx - keep) / 2), 1);
}

/**
 * Below this many prompt tokens no default context can have cut the prompt (the smallest shifted
 * length of the smallest default, 2048): a run this small never pays for a lookup.
 */
export const LOOKUP_MIN_PROMPT_TOKENS = Math.min(...KEPT_TOKENS.map((k) => shiftedPromptLength(DEFAULT_CONTEXTS[0], k)));

/** Is the context worth looking up for a prompt of this many tokens (when nothing is cached)? */
export function worthLookingUp(promptTokens: number): boolean {
  return promptTokens >= LOOKUP_MIN_PROMPT_TOKENS;
}

/** The verdict for a prompt of `promptTokens` tokens (its `prompt eval count`). */
export function judgePromptFit(promptTokens: number, evidence: ContextEvidence): PromptFit {
  const capped = (n: number) => (evidence.modelMax !== null && evidence.modelMax > 0 ? Math.min(n, evidence.modelMax) : n);
  const known: { size: number; source: ContextSource } | null =
    evidence.loaded !== null && evidence.loaded > 0
      ? { size: evidence.loaded, source: 'loaded' }
      : evidence.numCtx !== null && evidence.numCtx > 0
        ? { size: capped(evidence.numCtx), source: 'num_ctx' }
        : null;
  const shifted = (size: number) => KEPT_TOKENS.some((k) => promptTokens === shiftedPromptLength(size, k));
  const verdict = (contextSize: number, sign: 'full' | 'shifted', source: ContextSource): PromptFit => ({
    fits: false,
    promptTokens,
    contextSize,
    sign,
    source,
  });

  if (known !== null) {
    if (promptTokens >= known.size * NEAR_FULL_SHARE) return verdict(known.size, 'full', known.source);
    if (shifted(known.size)) return verdict(known.size, 'shifted', known.source);
    return { fits: true };
  }
  // The size is a guess: only the exact counts a cut prompt has under one of the defaults count.
  for (const size of new Set(DEFAULT_CONTEXTS.map(capped))) {
    if (promptTokens === size) return verdict(size, 'full', 'default');
    if (shifted(size)) return verdict(size, 'shifted', 'default');
  }
  return { fits: true };
}
