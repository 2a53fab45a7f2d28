import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Everything the server can be told, validated once at start-up. Each field names its variable. */
export interface Config {
  /** `OLLAMA_BIN`: the CLI to spawn. @default "ollama" (found on PATH) */
  readonly ollamaBin: string;
  /** `OLLAMA_HOST`: passed through to the CLI when set. */
  readonly ollamaHost: string | undefined;
  /** `OLLAMA_MCP_TELEMETRY_DIR`: holds runs.jsonl and state.json. @default the package's telemetry/ */
  readonly telemetryDir: string;
  /** `OLLAMA_MCP_CONCURRENCY`: model processes at once in this server (1-32). @default 3 */
  readonly concurrency: number;
  /** `OLLAMA_MCP_TIMEOUT_MS`: default per-run timeout (100-3600000). @default 120000 */
  readonly timeoutMs: number;
  /** `OLLAMA_MCP_MAX_RETRIES`: default `max_retries` (0-100, 0 = no limit). @default 3 */
  readonly maxRetries: number;
  /** `OLLAMA_MCP_BREAKER_THRESHOLD`: consecutive model failures that open a circuit (1-1000). @default 5 */
  readonly breakerThreshold: number;
  /** `OLLAMA_MCP_BREAKER_COOLDOWN_MS`: how long a circuit stays open (1000-86400000). @default 60000 */
  readonly breakerCooldownMs: number;
  /** `OLLAMA_MCP_KILL_GRACE_MS`: after SIGTERM, wait this long before SIGKILL (100-60000). @default 2000 */
  readonly killGraceMs: number;
  /** `OLLAMA_MCP_MAX_OUTPUT_BYTES`: stdout kept per run; more stops the model (1024-104857600). @default 1048576 */
  readonly maxOutputBytes: number;
  /** `OLLAMA_MCP_LOG_CONTENT`: `1`/`true` logs prompt and output text in runs.jsonl. @default false */
  readonly logContent: boolean;
  /** `OLLAMA_MCP_TASK_TTL_DAYS`: task ledger entries untouched this long are pruned (1-3650). @default 30 */
  readonly taskTtlMs: number;
  /** `OLLAMA_MCP_MAX_TASKS`: at most this many task ledger entries are kept (100-1000000). @default 10000 */
  readonly maxTasks: number;
}

/** Start-up stops with this: it names the variable, the bad value and what is allowed. */
export class ConfigError extends Error {
  readonly kind = 'config_error';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function isConfigError(error: unknown): error is ConfigError {
  return typeof error === 'object' && error !== null && (error as { kind?: unknown }).kind === 'config_error';
}

/** The package's own telemetry/ folder (next to dist/ and src/). */
export const DEFAULT_TELEMETRY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'telemetry');

type Env = Readonly<Record<string, string | undefined>>;

/** Read and validate the configuration from an environment. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = Number(raw.trim());
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new ConfigError(name, `${name} must be a whole number from ${min} to ${max}, got \`${raw}\``);
    }
    return value;
  };
  const bool = (name: string): boolean => {
    const raw = env[name]?.trim().toLowerCase();
    if (raw === undefined || raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
    if (raw === '1' || raw === 'true' || raw === 'yes') return true;
    throw new ConfigError(name, `${name} must be 1/true/yes or 0/false/no, got \`${env[name]}\``);
  };
  const text = (name: string, fallback: string): string => {
    const raw = env[name];
    if (raw === undefined) return fallback;
    if (raw.trim() === '') throw new ConfigError(name, `${name} is set but empty; unset it to use the default (${fallback})`);
    return raw;
  };

  const ollamaHost = env.OLLAMA_HOST?.trim() ? env.OLLAMA_HOST.trim() : undefined;
  if (ollamaHost !== undefined && /\s/.test(ollamaHost)) {
    throw new ConfigError('OLLAMA_HOST', `OLLAMA_HOST must be host, host:port or scheme://host:port, got \`${ollamaHost}\``);
  }
  return {
    ollamaBin: text('OLLAMA_BIN', 'ollama'),
    ollamaHost,
    telemetryDir: path.resolve(text('OLLAMA_MCP_TELEMETRY_DIR', DEFAULT_TELEMETRY_DIR)),
    concurrency: int('OLLAMA_MCP_CONCURRENCY', 3, 1, 32),
    timeoutMs: int('OLLAMA_MCP_TIMEOUT_MS', 120_000, 100, 3_600_000),
    maxRetries: int('OLLAMA_MCP_MAX_RETRIES', 3, 0, 100),
    breakerThreshold: int('OLLAMA_MCP_BREAKER_THRESHOLD', 5, 1, 1_000),
    breakerCooldownMs: int('OLLAMA_MCP_BREAKER_COOLDOWN_MS', 60_000, 1_000, 86_400_000),
    killGraceMs: int('OLLAMA_MCP_KILL_GRACE_MS', 2_000, 100, 60_000),
    maxOutputBytes: int('OLLAMA_MCP_MAX_OUTPUT_BYTES', 1_048_576, 1_024, 104_857_600),
    logContent: bool('OLLAMA_MCP_LOG_CONTENT'),
    taskTtlMs: int('OLLAMA_MCP_TASK_TTL_DAYS', 30, 1, 3_650) * 86_400_000,
    maxTasks: int('OLLAMA_MCP_MAX_TASKS', 10_000, 100, 1_000_000),
  };
}
