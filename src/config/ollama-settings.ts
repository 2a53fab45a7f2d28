import { parseGoDuration } from '../ollama/verbose-stats.js';

/**
 * Ollama's own settings, read as `ollama serve` reads them (envconfig/config.go): an invalid value
 * means Ollama's default, so a setting that Ollama accepts never stops this server from starting.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** A whole number ≥ 0 (Go's ParseUint), or null when unset or invalid. */
export function ollamaUint(env: Env, name: string): number | null {
  const raw = env[name]?.trim();
  if (raw === undefined || !/^\d+$/.test(raw)) return null;
  const value = Number(raw);
  return Number.isSafeInteger(value) ? value : null;
}

/** A duration as Ollama reads OLLAMA_KEEP_ALIVE and OLLAMA_LOAD_TIMEOUT: a Go duration or whole seconds; in ms, or null. */
export function ollamaDurationMs(env: Env, name: string): number | null {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return null;
  const ns = parseGoDuration(raw);
  if (ns !== null) return ns / 1e6;
  return /^[-+]?\d+$/.test(raw) ? Number(raw) * 1000 : null;
}
