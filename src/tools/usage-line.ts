import type { RunMetadata } from '../app/reply/run-result.js';

/** A load longer than this is worth a word in the verdict: the model was not in memory. */
const COLD_LOAD_MS = 1_000;

/**
 * One short line of token figures for the text verdict (`tokens: 26 in, 291 out, 123.65 tok/s`),
 * or `null` when the CLI reported none.
 */
export function usageLine(usage: RunMetadata['usage']): string | null {
  if (usage.prompt_tokens === null && usage.output_tokens === null) return null;
  const parts = [`tokens: ${usage.prompt_tokens ?? '?'} in, ${usage.output_tokens ?? '?'} out`];
  if (usage.tokens_per_second !== null) parts.push(`${usage.tokens_per_second} tok/s`);
  let line = parts.join(', ');
  if (usage.load_ms !== null && usage.load_ms >= COLD_LOAD_MS) line += ` (cold load: ${(usage.load_ms / 1000).toFixed(1)} s)`;
  return line;
}
