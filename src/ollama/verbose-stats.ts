import { stripVTControlCharacters } from 'node:util';

/** Token usage of one run, from the stats `ollama run --verbose` prints to stderr: all `null` when it printed none. */
export interface RunUsage {
  /** `prompt eval count`: tokens of the prompt the model read (after any truncation by Ollama). */
  readonly prompt_tokens: number | null;
  /** `eval count`: tokens the model generated (thinking included). */
  readonly output_tokens: number | null;
  /** `eval rate`: generated tokens per second. */
  readonly tokens_per_second: number | null;
  /** `prompt eval rate`: prompt tokens read per second. */
  readonly prompt_tokens_per_second: number | null;
  /** `load duration` in ms: a large one means the model was loaded cold for this run. */
  readonly load_ms: number | null;
  /** `total duration` in ms, as the server measured it. */
  readonly total_ms: number | null;
}

export const NO_USAGE: RunUsage = Object.freeze({
  prompt_tokens: null,
  output_tokens: null,
  tokens_per_second: null,
  prompt_tokens_per_second: null,
  load_ms: null,
  total_ms: null,
});

const LABELS = [
  'total duration',
  'load duration',
  'prompt eval count',
  'prompt eval duration',
  'prompt eval rate',
  'eval count',
  'eval duration',
  'eval rate',
] as const;
type Label = (typeof LABELS)[number];
const LABEL_SET: ReadonlySet<string> = new Set(LABELS);

/** One stats line (api.Metrics.Summary), not anchored at the start: the spinner's leftovers can precede it. */
const STAT_LINE = new RegExp(`(${LABELS.join('|')}): +(\\S+)(?: (token\\(s\\)|tokens/s))? *$`);

/** Every stats line the CLI printed, by label (the last one wins): the raw value after the label. */
function statLines(stderr: string): Map<Label, string> {
  const found = new Map<Label, string>();
  for (const line of stripVTControlCharacters(stderr).split('\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    // The label is the run of lowercase letters and spaces before the colon (a spinner frame may precede it).
    const label = /(?:^|[^a-z ])([a-z ]*)$/.exec(line.slice(0, colon))![1]!.trim();
    if (LABEL_SET.has(label)) found.set(label as Label, line.slice(colon + 1).trim());
  }
  return found;
}

/**
 * The usage the CLI reported on stderr, or {@link NO_USAGE} when it printed no stats. The CLI
 * omits a line whose value is zero, so once any stats line is there a missing count or duration
 * is 0, while a missing rate stays `null` (nothing was measured). A value that does not parse is
 * `null`. Pure.
 */
export function parseUsage(stderr: string): RunUsage {
  const lines = statLines(stderr);
  if (lines.size === 0) return { ...NO_USAGE }; // a fresh object: a result may be changed later
  const count = (label: Label): number | null => {
    const raw = lines.get(label);
    if (raw === undefined) return 0;
    const match = /^(\d+) token\(s\)$/.exec(raw);
    return match ? Number(match[1]) : null;
  };
  const durationMs = (label: Label): number | null => {
    const raw = lines.get(label);
    if (raw === undefined) return 0;
    const ns = parseGoDuration(raw);
    return ns === null ? null : Math.round((ns / 1e6) * 1000) / 1000;
  };
  const rate = (label: Label): number | null => {
    const raw = lines.get(label);
    const match = raw === undefined ? null : /^(\d+(?:\.\d+)?) tokens\/s$/.exec(raw);
    return match ? Number(match[1]) : null;
  };
  return {
    prompt_tokens: count('prompt eval count'),
    output_tokens: count('eval count'),
    tokens_per_second: rate('eval rate'),
    prompt_tokens_per_second: rate('prompt eval rate'),
    load_ms: durationMs('load duration'),
    total_ms: durationMs('total duration'),
  };
}

/** True for a line of the `--verbose` stats (after ANSI escapes are stripped): never an error message. */
export function isVerboseStatsLine(line: string): boolean {
  return STAT_LINE.test(line);
}

/** Nanoseconds per unit of Go's time.ParseDuration (`µs` is U+00B5, `μs` U+03BC). */
const UNIT_NS: Readonly<Record<string, number>> = { h: 3.6e12, m: 6e10, s: 1e9, ms: 1e6, us: 1e3, µs: 1e3, μs: 1e3, ns: 1 };
const DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|μs|ns|h|m|s)/g;
const DURATION = new RegExp(`^([-+]?)(0|(?:${DURATION_PART.source})+)$`);

/** A Go duration (`1.234567891s`, `812.3ms`, `54µs`, `1m2.5s`, `2h0m0s`, `0s`) in nanoseconds, or `null`. */
export function parseGoDuration(text: string): number | null {
  const match = DURATION.exec(text);
  if (match === null) return null;
  let total = 0;
  for (const [, amount, unit] of match[2]!.matchAll(DURATION_PART)) total += Number(amount) * UNIT_NS[unit!]!;
  return match[1] === '-' ? -total : total;
}
