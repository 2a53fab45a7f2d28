import { describeCliFailure, runCliCommand, type CliFailureCause } from './cli-command.js';
import { sizeCellOf } from './human-bytes.js';
import { canonicalModelName, MODEL_NAME_PATTERN } from './model-name.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A repeated miss refreshes the list at most this often (a model pulled since must still be found). */
export const MIN_REFRESH_INTERVAL_MS = 2_000;

/** One row of an `ollama list` table: the name as printed, and the least its file can weigh (null: no size, a cloud model's `-`). */
interface ListedModel {
  readonly name: string;
  readonly fileBytes: number | null;
}

/**
 * The rows of an `ollama list` table (`NAME  ID  SIZE  MODIFIED`, header first, cells padded with
 * spaces); lines that do not start with a model name are skipped.
 */
export function parseModelTable(stdout: string): ListedModel[] {
  const lines = stdout.split(/\r?\n/).map((line) => line.trim());
  const header = lines.findIndex((line) => /^NAME(?:\s|$)/.test(line));
  const rows = header === -1 ? lines : lines.slice(header + 1);
  const models: ListedModel[] = [];
  for (const row of rows) {
    const name = row.split(/\s+/, 1)[0] ?? '';
    if (name !== '' && MODEL_NAME_PATTERN.test(name)) models.push({ name, fileBytes: sizeCellOf(row)?.atLeast ?? null });
  }
  return models;
}

/** The model names of an `ollama list` table, as printed (see {@link parseModelTable}). */
export function parseModelList(stdout: string): string[] {
  return parseModelTable(stdout).map((row) => row.name);
}

export type ModelListResult =
  | {
      readonly ok: true;
      /** Canonical names (`llama3.2:latest`), in the CLI's order, without duplicates. */
      readonly models: readonly string[];
      /** The least each model's file weighs (SIZE), by canonical name; absent when not shown (cloud models). */
      readonly fileBytes: ReadonlyMap<string, number>;
      /** When the `ollama list` that produced it started (the options' clock). */
      readonly fetchedAt: number;
    }
  | {
      readonly ok: false;
      readonly cause: CliFailureCause;
      /** What went wrong: the connect error, the not-found message, the timeout. */
      readonly reason: string;
      readonly fetchedAt: number;
    };

/** Is this model installed? `unknown` means the list itself could not be read: do not act on it. */
type ModelCheck =
  | { readonly kind: 'installed' }
  | { readonly kind: 'missing'; readonly installed: string[] }
  | { readonly kind: 'unknown'; readonly reason: string; readonly cause: CliFailureCause };

interface InstalledModelsOptions {
  readonly bin: string;
  /** The complete environment of the CLI (include OLLAMA_HOST when configured). */
  readonly env: Env;
  /** How long a successful list is trusted. 0: every call asks the CLI (concurrent calls still share one). */
  readonly ttlMs: number;
  /** Epoch ms. @default Date.now */
  readonly clock?: () => number;
  /** Limit for one `ollama list`. @default 10000 */
  readonly timeoutMs?: number;
}

/**
 * The models installed on the Ollama server, from `ollama list` (one in flight at a time), cached
 * for `ttlMs`; a failed list only for MIN_REFRESH_INTERVAL_MS, so a server that comes back is noticed.
 */
export class InstalledModels {
  readonly bin: string;
  readonly env: Env;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  readonly #clock: () => number;
  #cached: ModelListResult | null = null;
  #inFlight: Promise<ModelListResult> | null = null;
  /** Clock time at which the last `ollama list` was spawned. */
  #lastSpawnAt = Number.NEGATIVE_INFINITY;

  constructor(options: InstalledModelsOptions) {
    this.bin = options.bin;
    this.env = options.env;
    this.ttlMs = Math.max(0, options.ttlMs);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.#clock = options.clock ?? Date.now;
  }

  /** The list: from the cache while it is fresh, else from one (shared) `ollama list`. */
  async list(): Promise<ModelListResult> {
    return (await this.#get(false)).result;
  }

  /** A new `ollama list` (or the one already running), whatever the cache holds. */
  async refresh(): Promise<ModelListResult> {
    return (await this.#get(true)).result;
  }

  /** The last list obtained, without asking the CLI. */
  get cached(): ModelListResult | null {
    return this.#cached;
  }

  /** The least `model`'s file weighs, from the last list obtained (undefined: not known). Asks nothing. */
  fileBytesOf(model: string): number | undefined {
    const cached = this.#cached;
    return cached?.ok ? cached.fileBytes.get(canonicalModelName(model)) : undefined;
  }

  /** Is `model` (any spelling) installed? A miss against a cached list asks again, at most every MIN_REFRESH_INTERVAL_MS. */
  async check(model: string): Promise<ModelCheck> {
    const wanted = canonicalModelName(model);
    let { result, fresh } = await this.#get(false);
    if (result.ok && !result.models.includes(wanted) && !fresh && this.#clock() - this.#lastSpawnAt >= MIN_REFRESH_INTERVAL_MS) {
      result = (await this.#get(true)).result;
    }
    if (!result.ok) return { kind: 'unknown', reason: result.reason, cause: result.cause };
    return result.models.includes(wanted) ? { kind: 'installed' } : { kind: 'missing', installed: [...result.models] };
  }

  /** `fresh`: the result comes from an `ollama list` this call waited for, not from the cache. */
  async #get(force: boolean): Promise<{ result: ModelListResult; fresh: boolean }> {
    if (this.#inFlight) return { result: await this.#inFlight, fresh: true };
    const cached = this.#cached;
    const trustMs = cached?.ok ? this.ttlMs : Math.min(this.ttlMs, MIN_REFRESH_INTERVAL_MS);
    if (!force && cached && this.#clock() - cached.fetchedAt < trustMs) return { result: cached, fresh: false };
    const fetching = this.#fetch();
    this.#inFlight = fetching;
    try {
      return { result: await fetching, fresh: true };
    } finally {
      if (this.#inFlight === fetching) this.#inFlight = null;
    }
  }

  async #fetch(): Promise<ModelListResult> {
    const fetchedAt = this.#clock();
    this.#lastSpawnAt = fetchedAt;
    const args = ['list'];
    const outcome = await runCliCommand({ bin: this.bin, args, env: this.env, timeoutMs: this.timeoutMs });
    let result: ModelListResult;
    if (outcome.spawnError === null && !outcome.timedOut && outcome.exitCode === 0) {
      const rows = parseModelTable(outcome.stdout);
      const models = [...new Set(rows.map((row) => canonicalModelName(row.name)))];
      const fileBytes = new Map<string, number>();
      for (const row of rows) if (row.fileBytes !== null) fileBytes.set(canonicalModelName(row.name), row.fileBytes);
      result = { ok: true, models, fileBytes, fetchedAt };
    } else {
      const { cause, reason } = describeCliFailure(this.bin, args, outcome, this.timeoutMs);
      result = { ok: false, cause, reason, fetchedAt };
    }
    this.#cached = result;
    return result;
  }
}
