import type { Config } from '../../config/config.js';
import { lookupContextWindow } from '../../ollama/context-window.js';
import { canonicalModelName } from '../../ollama/model-name.js';
import type { RunUsage } from '../../ollama/verbose-stats.js';
import { judgePromptFit, NO_EVIDENCE, worthLookingUp, type ContextEvidence } from '../../policy/prompt-fit.js';
import type { RunWarning } from '../reply/run-result.js';
import { promptMayBeTruncated } from '../reply/run-warnings.js';

/** How long what the CLI said of a model's context is trusted (`ps` shows the loaded instance, which a reload may change). */
export const CONTEXT_CACHE_TTL_MS = 60_000;
/** The most a run's result waits for the lookup (`ollama ps`, then `ollama show` if needed). */
const CONTEXT_LOOKUP_BUDGET_MS = 2_000;
/** Models remembered at most (a long-lived server that saw many models must not grow without bound). */
const MAX_CACHED_MODELS = 256;

interface ContextCheckDeps {
  /** The evidence for a model, or null when the CLI could not tell. */
  readonly lookup: (model: string) => Promise<ContextEvidence | null>;
  readonly clock: () => number;
}

/**
 * Warns when a run's prompt probably did not fit the model's context window. It costs nothing on an
 * ordinary run: a prompt too small to have been cut by any default context is judged from the cache
 * or not at all; only a large prompt spawns a lookup, at most once per model per TTL (concurrent
 * runs share it), and within a bounded time.
 */
export class ContextCheck {
  readonly #lookup: (model: string) => Promise<ContextEvidence | null>;
  readonly #clock: () => number;
  readonly #cache = new Map<string, { evidence: ContextEvidence; at: number }>();
  readonly #pending = new Map<string, Promise<ContextEvidence>>();

  constructor(deps: ContextCheckDeps) {
    this.#lookup = deps.lookup;
    this.#clock = deps.clock;
  }

  /** The `prompt_may_be_truncated` warning for a run of `model` that reported `usage`, or null. */
  async warningFor(model: string, usage: RunUsage): Promise<RunWarning | null> {
    const promptTokens = usage.prompt_tokens;
    if (promptTokens === null || promptTokens === 0) return null;
    const key = canonicalModelName(model);
    const cached = this.#cache.get(key);
    const fresh = cached !== undefined && this.#clock() - cached.at < CONTEXT_CACHE_TTL_MS ? cached.evidence : undefined;
    if (fresh === undefined && !worthLookingUp(promptTokens)) return null;
    const evidence = fresh ?? (await this.#evidence(key, model));
    const fit = judgePromptFit(promptTokens, evidence);
    return fit.fits ? null : promptMayBeTruncated(fit);
  }

  #evidence(key: string, model: string): Promise<ContextEvidence> {
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = this.#lookup(model)
        .catch(() => null)
        .then((found) => {
          const evidence = found ?? NO_EVIDENCE;
          if (this.#cache.size >= MAX_CACHED_MODELS && !this.#cache.has(key)) {
            this.#cache.delete(this.#cache.keys().next().value!);
          }
          this.#cache.set(key, { evidence, at: this.#clock() });
          return evidence;
        })
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    return pending;
  }
}

/** The check as the server runs it: the configured CLI, the CLI's environment, the real clock. */
export function cliContextCheck(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
  clock: () => number,
): ContextCheck {
  return new ContextCheck({
    clock,
    lookup: (model) => lookupContextWindow({ bin: config.ollamaBin, env, model, budgetMs: CONTEXT_LOOKUP_BUDGET_MS }),
  });
}
