import { readFile, stat } from 'node:fs/promises';
import * as z from 'zod';
import { describeJsonError } from './json-position.js';
import { SETTING_RANGES } from './ranges.js';
import { describeIssue, formatPath, type KeyHints } from './zod-english.js';
import { ConfigError, type Config } from './config.js';
import { canonicalModelName } from '../ollama/model-name.js';
import { MAX_FALLBACK_MODELS } from '../policy/fallback.js';
import { compileMatch, crossCheck, matches } from './tier-rules.js';

/**
 * Per-model tiers: an optional JSON file (`OLLAMA_MCP_CONFIG`) with defaults, named tiers and
 * ordered `models` rules matched by exact name or glob (docs/configuration.md has an example).
 *
 * Resolution for one model, later wins: Config (environment) < file `defaults` < the first matching
 * rule's tier < that rule's own keys < per-call arguments (applied by the caller, not here).
 */

const VARIABLE = 'OLLAMA_MCP_CONFIG';

/** What one run of a model may use, after the tiers file is applied. */
export interface ModelSettings {
  /** Limit of the answer, from its first byte. */
  readonly timeoutMs: number;
  /** Limit of the wait for the first byte (Ollama's queue, the load, reading the prompt). */
  readonly startTimeoutMs: number;
  /** 0 = no limit. */
  readonly maxRetries: number;
  readonly breakerThreshold: number;
  readonly breakerCooldownMs: number;
  /** Requests of the model Ollama runs at once; more calls for it wait in this server's queue (within the global limit). */
  readonly parallel: number;
  /** Which rule/tier applied, for metadata and health: e.g. "deepseek-r1* (tier reasoning)"; null when no rule matched. */
  readonly source: string | null;
  /** The rule's default fallback chain: models tried in order when this one cannot serve a call. [] = none. */
  readonly fallback: readonly string[];
}

/** One `models` rule as resolved, for health output. */
export interface TierRule {
  /** The rule's `match`, as written. */
  readonly match: string;
  readonly tier: string | null;
  /** What a model matched by this rule gets (defaults, tier and rule keys applied over Config). */
  readonly settings: ModelSettings;
}

export interface ModelTiers {
  /** Settings for a model name (any spelling: `llama3.2`, `library/llama3.2:latest`). */
  settingsFor(model: string): ModelSettings;
  /** What a model that matches no rule gets: Config values with the file's `defaults` over them. */
  readonly defaults: ModelSettings;
  /** The `models` rules in file order (first match wins). */
  readonly rules: readonly TierRule[];
  /** The tiers file, or null when there is none. */
  readonly file: string | null;
}

type SettingKey = keyof typeof SETTING_RANGES;
const SETTING_KEYS = Object.keys(SETTING_RANGES) as SettingKey[];
/** Each setting's key in the file and its field in ModelSettings (and Config). */
const FIELD = {
  timeout_ms: 'timeoutMs',
  start_timeout_ms: 'startTimeoutMs',
  max_retries: 'maxRetries',
  breaker_threshold: 'breakerThreshold',
  breaker_cooldown_ms: 'breakerCooldownMs',
  parallel: 'parallel',
} as const satisfies Record<SettingKey, keyof ModelSettings & keyof Config>;

const ROOT_KEYS = ['defaults', 'tiers', 'models'] as const;
const RULE_KEYS = ['match', 'tier', ...SETTING_KEYS, 'fallback'] as const;

/** The tiers file's schemas, made on first use: a server without a tiers file starts without building them. */
function tiersSchemas() {
  const settingsShape = Object.fromEntries(
    SETTING_KEYS.map((key) => [key, z.int().min(SETTING_RANGES[key].min).max(SETTING_RANGES[key].max).optional()]),
  ) as Record<SettingKey, z.ZodOptional<z.ZodInt>>;
  const settings = z.strictObject(settingsShape);
  const rule = z.strictObject({
    match: z.string(),
    tier: z.string().optional(),
    ...settingsShape,
    fallback: z.array(z.string()).max(MAX_FALLBACK_MODELS).optional(),
  });
  const file = z
    .strictObject({
      defaults: settings.optional(),
      tiers: z.record(z.string(), settings).optional(),
      models: z.array(rule).optional(),
    })
    .superRefine((value, ctx) => {
      for (const issue of crossCheck(value)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    });
  return { settings, file };
}

type TiersSchemas = ReturnType<typeof tiersSchemas>;
let schemas: TiersSchemas | null = null;

export type TiersFile = z.infer<TiersSchemas['file']>;
type Settings = z.infer<TiersSchemas['settings']>;

const NO_FALLBACK: readonly string[] = Object.freeze([]);

/** The settings of every model when there is no tiers file: the environment's. */
export function configSettings(config: Pick<Config, (typeof FIELD)[SettingKey]>): ModelSettings {
  const settings = Object.fromEntries(SETTING_KEYS.map((key) => [FIELD[key], config[FIELD[key]]]));
  return { ...settings, source: null, fallback: NO_FALLBACK } as ModelSettings;
}

/** Tiers from Config and a valid file (see parseTiersFile), or Config alone when `file` is null. Pure. */
export function buildModelTiers(config: Config, file: TiersFile | null, filePath: string | null): ModelTiers {
  const defaults = Object.freeze(overlay(configSettings(config), file?.defaults));
  const tiers = new Map(Object.entries(file?.tiers ?? {}));
  const rules = (file?.models ?? []).map((rule) => {
    const tier = rule.tier ?? null;
    const source = tier === null ? rule.match : `${rule.match} (tier ${tier})`;
    const fallback = rule.fallback === undefined ? NO_FALLBACK : Object.freeze([...rule.fallback]);
    const settings = Object.freeze({
      ...overlay(overlay(defaults, tier === null ? undefined : tiers.get(tier)), rule),
      source,
      fallback,
    });
    return { rule: Object.freeze({ match: rule.match, tier, settings }), matcher: compileMatch(rule.match) };
  });
  return Object.freeze({
    settingsFor(model: string): ModelSettings {
      const lower = model.trim().toLowerCase();
      const canonical = canonicalModelName(model);
      return rules.find(({ matcher }) => matches(matcher, lower, canonical))?.rule.settings ?? defaults;
    },
    defaults,
    rules: Object.freeze(rules.map(({ rule }) => rule)),
    file: filePath,
  });
}

function overlay(settings: ModelSettings, layer: Settings | undefined): ModelSettings {
  if (layer === undefined) return settings;
  const next: Record<string, unknown> = { ...settings };
  for (const key of SETTING_KEYS) if (layer[key] !== undefined) next[FIELD[key]] = layer[key];
  return next as unknown as ModelSettings;
}

/** Validate a parsed JSON value. Throws ConfigError: `OLLAMA_MCP_CONFIG (<path>): <key path> <problem>[; ...]`. */
export function parseTiersFile(raw: unknown, filePath: string | null): TiersFile {
  const result = (schemas ??= tiersSchemas()).file.safeParse(raw);
  if (result.success) return result.data;
  const seen = new Set<string>();
  const messages: string[] = [];
  for (const issue of result.error.issues) {
    const where = formatPath(issue.path);
    // One message per key: an out-of-range huge integer also fails the safe-integer check.
    if (issue.code !== 'custom' && seen.has(where)) continue;
    seen.add(where);
    messages.push(describeIssue(issue, where, raw, TIERS_KEYS));
  }
  const shown = messages.slice(0, 5).join('; ');
  const more = messages.length > 5 ? ` (and ${messages.length - 5} more)` : '';
  throw tiersError(filePath, `${shown}${more}`);
}

function tiersError(filePath: string | null, message: string): ConfigError {
  return new ConfigError(VARIABLE, `${VARIABLE}${filePath === null ? '' : ` (${filePath})`}: ${message}`);
}

/** What the messages may say about the tiers file's keys. */
const TIERS_KEYS: KeyHints = {
  allowedKeys(path) {
    if (path.length === 0) return ROOT_KEYS;
    if (path[0] === 'models' && path.length === 2) return RULE_KEYS;
    if ((path[0] === 'defaults' && path.length === 1) || (path[0] === 'tiers' && path.length === 2)) return SETTING_KEYS;
    return [];
  },
  // The documented range of a setting key (zod also reports the safe-integer range for huge numbers).
  rangeOf(path) {
    const key = path[path.length - 1];
    return typeof key === 'string' && Object.hasOwn(SETTING_RANGES, key) ? SETTING_RANGES[key as SettingKey] : undefined;
  },
  // `concurrency` (runs of one model at once) is `parallel` now, Ollama's word for the same limit.
  renamedTo: (key) => (key === 'concurrency' ? 'parallel' : undefined),
};

/** A tiers file larger than this is surely the wrong file. */
const MAX_FILE_BYTES = 1_048_576;

/** Tiers from Config and the file `configFile` names, if any. Every problem throws ConfigError naming the file and key. */
export async function loadModelTiers(config: Config): Promise<ModelTiers> {
  const filePath = config.configFile;
  if (filePath === undefined) return buildModelTiers(config, null, null);

  let text: string;
  try {
    // stat first: a directory, FIFO or device (/dev/zero) would fail oddly or never finish reading.
    const info = await stat(filePath);
    if (!info.isFile()) throw tiersError(filePath, 'not a regular file');
    if (info.size > MAX_FILE_BYTES)
      throw tiersError(filePath, `file is ${info.size} bytes; a tiers file must be at most ${MAX_FILE_BYTES}`);
    text = await readFile(filePath, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw tiersError(filePath, readProblem(error));
  }
  return buildModelTiers(config, parseTiersFile(parseJson(text, filePath), filePath), filePath);
}

function readProblem(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return 'file not found';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied reading the file';
  if (code === 'ENOTDIR') return 'file not found (a parent is not a folder)';
  return `cannot read the file: ${error instanceof Error ? error.message : String(error)}`;
}

/** JSON.parse with a message that says where: line, column and offset. */
export function parseJson(rawText: string, filePath: string | null): unknown {
  const text = rawText.startsWith('\uFEFF') ? rawText.slice(1) : rawText;
  if (text.trim() === '') throw tiersError(filePath, 'the file is empty; it must hold a JSON object (e.g. {})');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw tiersError(filePath, describeJsonError(text, error));
  }
}
