import path from 'node:path';
import {
  currentTelemetryDirContext,
  isTelemetryDirProblem,
  resolveTelemetryDir,
  type TelemetryDirContext,
} from './telemetry-dir.js';
import { ollamaDurationMs, ollamaUint } from './ollama-settings.js';
import { HTTP_CONNECTIONS, HTTP_TOKEN_MIN_CHARS, HTTP_TOKEN_TOO_SHORT, REPLY_WITHIN_RANGE, SETTING_RANGES } from './ranges.js';
import { isRedisUrlError, parseRedisUrl } from './redis-url.js';
import { isHostsError, parseHosts, type HostSpec } from './hosts.js';
import { ollamaKeyOf } from '../policy/host-key.js';

/** Everything the server can be told, validated once at start-up. Each field names its variable; docs/configuration.md gives the ranges. */
export interface Config {
  /** `OLLAMA_BIN`: the CLI to spawn. @default "ollama" (found on PATH) */
  readonly ollamaBin: string;
  /** `OLLAMA_HOST`: passed through to the CLI when set. */
  readonly ollamaHost: string | undefined;
  /** `OLLAMA_MCP_HOSTS`: the Ollama servers calls are routed to (hosts.ts); default: the one OLLAMA_HOST. */
  readonly hosts: readonly HostSpec[];
  /** `OLLAMA_MCP_TELEMETRY_DIR`: holds runs.jsonl and the state files. @default see resolveTelemetryDir */
  readonly telemetryDir: string;
  /** Why telemetryDir is where it is (the variable, a source checkout, or the per-user state dir). */
  readonly telemetryDirReason: string;
  /** `OLLAMA_MCP_CONCURRENCY`: model processes at once in this server. @default 3 */
  readonly concurrency: number;
  /** `OLLAMA_MCP_SHARED_CONCURRENCY`: model processes at once across the servers sharing the telemetry dir; null: no such cap. */
  readonly sharedConcurrency: number | null;
  /**
   * `OLLAMA_MCP_SHARED_QUEUE`: every server in front of the same Ollama (same OLLAMA_HOST, same data
   * dir or team Redis) dispatches from one queue. Off: each server orders only its own. @default true
   */
  readonly sharedQueue: boolean;
  /** Requests of one model Ollama runs at once (more wait here): `OLLAMA_MCP_PARALLEL`, else `OLLAMA_NUM_PARALLEL`, else 1. */
  readonly parallel: number;
  /** Where `parallel` came from, for health and doctor. */
  readonly parallelSource: string;
  /** Models Ollama keeps loaded together: `OLLAMA_MCP_MAX_LOADED_MODELS`, else `OLLAMA_MAX_LOADED_MODELS`; null: learned. */
  readonly maxLoadedModels: number | null;
  /** Where `maxLoadedModels` came from, for health and doctor. */
  readonly maxLoadedModelsSource: string;
  /** `OLLAMA_MCP_START_TIMEOUT_MS`: limit of the wait for the answer's first byte. @default OLLAMA_LOAD_TIMEOUT, else 300000 */
  readonly startTimeoutMs: number;
  /** `OLLAMA_MCP_SWITCH_AFTER_MS`: longest wait of a call for a model not loaded behind the loaded one's. @default 30000 */
  readonly switchAfterMs: number;
  /** How long Ollama keeps an idle model loaded: `OLLAMA_KEEP_ALIVE` as Ollama reads it, Infinity if negative. @default 5 min */
  readonly keepAliveMs: number;
  /** `OLLAMA_MCP_TIMEOUT_MS`: default limit of a run's answer, from its first byte. @default 120000 */
  readonly timeoutMs: number;
  /** `OLLAMA_MCP_MAX_RETRIES`: default `max_retries` (0 = no limit). @default 3 */
  readonly maxRetries: number;
  /** `OLLAMA_MCP_BREAKER_THRESHOLD`: consecutive model failures that open a circuit. @default 5 */
  readonly breakerThreshold: number;
  /** `OLLAMA_MCP_BREAKER_COOLDOWN_MS`: how long a circuit stays open. @default 60000 */
  readonly breakerCooldownMs: number;
  /** `OLLAMA_MCP_KILL_GRACE_MS`: after SIGTERM, wait this long before SIGKILL. @default 2000 */
  readonly killGraceMs: number;
  /** `OLLAMA_MCP_MAX_OUTPUT_BYTES`: stdout kept per run; more stops the model. @default 1048576 */
  readonly maxOutputBytes: number;
  /** `OLLAMA_MCP_LOG_CONTENT`: log prompt and output text in runs.jsonl. @default false */
  readonly logContent: boolean;
  /** `OLLAMA_MCP_RUNS_SUMMARY_TOOL`: also list the review tool `ollama_runs_summary`. @default false */
  readonly runsSummaryTool: boolean;
  /** `OLLAMA_MCP_TASK_TTL_DAYS` in ms: task ledger entries untouched this long are pruned. @default 30 days */
  readonly taskTtlMs: number;
  /** `OLLAMA_MCP_MAX_TASKS`: at most this many task ledger entries are kept. @default 10000 */
  readonly maxTasks: number;
  /** `OLLAMA_MCP_PROGRESS_INTERVAL_MS`: progress heartbeat period, when the client asks for progress. @default 5000 */
  readonly progressIntervalMs: number;
  /**
   * `OLLAMA_MCP_REPLY_WITHIN_MS`: `ollama_run` and `ollama_run_many` answer within this long, with a
   * job to collect when the work goes on. null: not set, chosen from the client (tools/reply-within.ts)
   */
  readonly replyWithinMs: number | null;
  /** `OLLAMA_MCP_ESCALATION`: `block` also refuses further runs of an escalated task until it is reset. @default "signal" */
  readonly escalationMode: 'signal' | 'block';
  /** `OLLAMA_MCP_PREFLIGHT`: check a model is installed (`ollama list`) before running it. @default true */
  readonly preflight: boolean;
  /** `OLLAMA_MCP_MODEL_LIST_TTL_MS`: how long the installed-model list is trusted. @default 30000 */
  readonly modelListTtlMs: number;
  /** `OLLAMA_MCP_CONFIG`: optional JSON file with defaults and per-model tiers. */
  readonly configFile: string | undefined;
  /** `OLLAMA_MCP_HTTP_TOKEN`: the HTTP transport's bearer token. @default one generated once, kept in the telemetry dir */
  readonly httpToken: string | undefined;
  /** `OLLAMA_MCP_HTTP_AUTH`: `none` turns the bearer token check off (refused on a non-loopback host). @default "token" */
  readonly httpAuth: 'token' | 'none';
  /** `OLLAMA_MCP_HTTP_MAX_CONNECTIONS`: connections to `--http` serving no request at most. @default 256 */
  readonly httpMaxConnections: number;
  /** `OLLAMA_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS`: the same, from one remote address. @default 128 */
  readonly httpMaxConnectionsPerAddress: number;
  /** `OLLAMA_MCP_BUSY_RETRIES`: retries inside one call, with backoff, after a "not now" (`server busy`, a usage limit, `spawn_failed`). @default 3 */
  readonly busyRetries: number;
  /** `OLLAMA_MCP_LOG_MAX_BYTES`: runs.jsonl moves on to a new file past this size. @default 52428800 */
  readonly logMaxBytes: number;
  /** `OLLAMA_MCP_LOG_RETENTION_DAYS` in ms: rotated log files older than this are deleted (0 keeps them). @default 90 days */
  readonly logRetentionMs: number;
  /** `OLLAMA_MCP_LOG_MAX_TOTAL_BYTES`: past this, the oldest rotated log files are deleted (0 = no limit). @default 1073741824 */
  readonly logMaxTotalBytes: number;
  /** `OLLAMA_MCP_STATE_URL`: the Redis of team mode. Holds the password: show it only through `redactRedisUrl`. */
  readonly stateUrl: string | undefined;
  /** `OLLAMA_MCP_STATE_PREFIX`: prefix of every Redis key (team mode). @default "ollama-mcp:" */
  readonly statePrefix: string;
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

type Env = Readonly<Record<string, string | undefined>>;

/** The telemetry dir and why, as the server, `doctor` and `report` choose it. Throws ConfigError. */
export function telemetryDirFor(context: TelemetryDirContext): { dir: string; why: string } {
  const choice = resolveTelemetryDir(context);
  if (isTelemetryDirProblem(choice)) throw new ConfigError(choice.variable, choice.message);
  return choice;
}

/** Read and validate an environment (`where`: this process's, for the default telemetry dir). Throws ConfigError. */
export function loadConfig(env: Env, where: TelemetryDirContext = currentTelemetryDirContext(env)): Config {
  const read = envReader(env);
  const { int, setting, bool } = read;
  const http = httpAccess(read);
  const configFile = read.optional('OLLAMA_MCP_CONFIG');
  const host = ollamaHost(env);
  const state = stateLocation(env, read);
  const telemetry = telemetryDirFor({ ...where, env });
  const parallel = read.oursElseOllamas('OLLAMA_MCP_PARALLEL', 'OLLAMA_NUM_PARALLEL', SETTING_RANGES.parallel);
  const maxLoaded = read.oursElseOllamas('OLLAMA_MCP_MAX_LOADED_MODELS', 'OLLAMA_MAX_LOADED_MODELS', { min: 1, max: 32 });
  return {
    ollamaBin: read.text('OLLAMA_BIN', 'ollama'),
    ollamaHost: host,
    hosts: hostsOf(env, host),
    telemetryDir: telemetry.dir,
    telemetryDirReason: telemetry.why,
    concurrency: int('OLLAMA_MCP_CONCURRENCY', 3, { min: 1, max: 32 }),
    sharedConcurrency: read.optional('OLLAMA_MCP_SHARED_CONCURRENCY')
      ? int('OLLAMA_MCP_SHARED_CONCURRENCY', 0, { min: 1, max: 256 })
      : null,
    sharedQueue: bool('OLLAMA_MCP_SHARED_QUEUE', true),
    parallel: parallel?.value ?? 1,
    parallelSource: parallel?.source ?? "Ollama's default",
    maxLoadedModels: maxLoaded?.value ?? null,
    maxLoadedModelsSource: maxLoaded?.source ?? 'learned from `ollama ps`',
    startTimeoutMs: setting('OLLAMA_MCP_START_TIMEOUT_MS', defaultStartTimeoutMs(env), 'start_timeout_ms'),
    switchAfterMs: int('OLLAMA_MCP_SWITCH_AFTER_MS', 30_000, { min: 0, max: 3_600_000 }),
    keepAliveMs: keepAliveMs(env),
    timeoutMs: setting('OLLAMA_MCP_TIMEOUT_MS', 120_000, 'timeout_ms'),
    maxRetries: setting('OLLAMA_MCP_MAX_RETRIES', 3, 'max_retries'),
    breakerThreshold: setting('OLLAMA_MCP_BREAKER_THRESHOLD', 5, 'breaker_threshold'),
    breakerCooldownMs: setting('OLLAMA_MCP_BREAKER_COOLDOWN_MS', 60_000, 'breaker_cooldown_ms'),
    killGraceMs: int('OLLAMA_MCP_KILL_GRACE_MS', 2_000, { min: 100, max: 60_000 }),
    maxOutputBytes: int('OLLAMA_MCP_MAX_OUTPUT_BYTES', 1_048_576, { min: 1_024, max: 104_857_600 }),
    logContent: bool('OLLAMA_MCP_LOG_CONTENT', false),
    runsSummaryTool: bool('OLLAMA_MCP_RUNS_SUMMARY_TOOL', false),
    taskTtlMs: int('OLLAMA_MCP_TASK_TTL_DAYS', 30, { min: 1, max: 3_650 }) * DAY_MS,
    maxTasks: int('OLLAMA_MCP_MAX_TASKS', 10_000, { min: 100, max: 1_000_000 }),
    progressIntervalMs: int('OLLAMA_MCP_PROGRESS_INTERVAL_MS', 5_000, { min: 100, max: 60_000 }),
    replyWithinMs: read.optional('OLLAMA_MCP_REPLY_WITHIN_MS') ? int('OLLAMA_MCP_REPLY_WITHIN_MS', 0, REPLY_WITHIN_RANGE) : null,
    escalationMode: read.choice('OLLAMA_MCP_ESCALATION', 'signal', ['signal', 'block'] as const),
    preflight: bool('OLLAMA_MCP_PREFLIGHT', true),
    modelListTtlMs: int('OLLAMA_MCP_MODEL_LIST_TTL_MS', 30_000, { min: 0, max: 3_600_000 }),
    configFile: configFile === undefined ? undefined : path.resolve(configFile),
    ...http,
    httpMaxConnections: int('OLLAMA_MCP_HTTP_MAX_CONNECTIONS', HTTP_CONNECTIONS.total, HTTP_CONNECTIONS_RANGE),
    httpMaxConnectionsPerAddress: int(
      'OLLAMA_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS',
      HTTP_CONNECTIONS.perAddress,
      HTTP_CONNECTIONS_RANGE,
    ),
    logMaxBytes: int('OLLAMA_MCP_LOG_MAX_BYTES', 52_428_800, { min: 1_024, max: 107_374_182_400 }),
    logRetentionMs: int('OLLAMA_MCP_LOG_RETENTION_DAYS', 90, { min: 0, max: 36_500 }) * DAY_MS,
    logMaxTotalBytes: int('OLLAMA_MCP_LOG_MAX_TOTAL_BYTES', 1_073_741_824, { min: 0, max: 1_125_899_906_842_624 }),
    busyRetries: int('OLLAMA_MCP_BUSY_RETRIES', 3, { min: 0, max: 10 }),
    ...state,
  };
}

const DAY_MS = 86_400_000;
const HTTP_CONNECTIONS_RANGE = { min: 1, max: 100_000 };

type Range = { readonly min: number; readonly max: number };
type EnvReader = ReturnType<typeof envReader>;

/** Readers of one environment's variables, each throwing a ConfigError that quotes the bad value. */
function envReader(env: Env) {
  const optional = (name: string): string | undefined => env[name]?.trim() || undefined;
  const int = (name: string, fallback: number, { min, max }: Range): number => {
    const raw = optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new ConfigError(name, `${name} must be a whole number from ${min} to ${max}, got \`${env[name]}\``);
    }
    return value;
  };
  return {
    optional,
    int,
    setting: (name: string, fallback: number, key: keyof typeof SETTING_RANGES): number =>
      int(name, fallback, SETTING_RANGES[key]),
    bool(name: string, fallback: boolean): boolean {
      const raw = optional(name)?.toLowerCase();
      if (raw === undefined) return fallback;
      if (raw === '0' || raw === 'false' || raw === 'no') return false;
      if (raw === '1' || raw === 'true' || raw === 'yes') return true;
      throw new ConfigError(name, `${name} must be 1/true/yes or 0/false/no, got \`${env[name]}\``);
    },
    text(name: string, fallback: string): string {
      const raw = env[name];
      if (raw === undefined) return fallback;
      if (raw.trim() === '') throw new ConfigError(name, `${name} is set but empty; unset it to use the default (${fallback})`);
      return raw;
    },
    /** Our variable when set, else Ollama's own above 0 (it reads 0 as its default) capped to the range; else null. */
    oursElseOllamas(ours: string, theirs: string, range: Range): { value: number; source: string } | null {
      if (optional(ours)) return { value: int(ours, range.min, range), source: ours };
      const ollama = ollamaUint(env, theirs);
      return ollama !== null && ollama > 0 ? { value: Math.min(ollama, range.max), source: theirs } : null;
    },
    choice<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
      const raw = optional(name)?.toLowerCase();
      if (raw === undefined) return fallback;
      if ((allowed as readonly string[]).includes(raw)) return raw as T;
      throw new ConfigError(name, `${name} must be one of ${allowed.join(', ')}, got \`${env[name]}\``);
    },
  };
}

/** The HTTP transport's bearer token and whether it is required: a short token, or none with a token, is refused. */
function httpAccess(read: EnvReader): Pick<Config, 'httpToken' | 'httpAuth'> {
  const httpToken = read.optional('OLLAMA_MCP_HTTP_TOKEN');
  if (httpToken !== undefined && httpToken.length < HTTP_TOKEN_MIN_CHARS) {
    throw new ConfigError('OLLAMA_MCP_HTTP_TOKEN', HTTP_TOKEN_TOO_SHORT);
  }
  const httpAuth = read.choice('OLLAMA_MCP_HTTP_AUTH', 'token', ['token', 'none'] as const);
  if (httpAuth === 'none' && httpToken !== undefined) {
    throw new ConfigError(
      'OLLAMA_MCP_HTTP_AUTH',
      'OLLAMA_MCP_HTTP_AUTH=none contradicts OLLAMA_MCP_HTTP_TOKEN, which is set: unset one of them',
    );
  }
  return { httpToken, httpAuth };
}

/** Team mode's Redis URL (checked, never shown with its password) and key prefix. */
function stateLocation(env: Env, read: EnvReader): Pick<Config, 'stateUrl' | 'statePrefix'> {
  const stateUrl = read.optional('OLLAMA_MCP_STATE_URL');
  if (stateUrl !== undefined) {
    const parsed = parseRedisUrl(stateUrl);
    if (isRedisUrlError(parsed)) throw new ConfigError('OLLAMA_MCP_STATE_URL', `OLLAMA_MCP_STATE_URL: ${parsed.error}`);
  }
  const statePrefix = env.OLLAMA_MCP_STATE_PREFIX ?? 'ollama-mcp:';
  // A key prefix that can be typed in redis-cli.
  if (!/^[\x21-\x7e]{1,100}$/.test(statePrefix)) {
    throw new ConfigError(
      'OLLAMA_MCP_STATE_PREFIX',
      `OLLAMA_MCP_STATE_PREFIX must be 1 to 100 printable characters without spaces (e.g. \`team-a:\`), got \`${statePrefix}\``,
    );
  }
  return { stateUrl, statePrefix };
}

function ollamaHost(env: Env): string | undefined {
  const host = env.OLLAMA_HOST?.trim() || undefined;
  if (host !== undefined && /\s/.test(host)) {
    throw new ConfigError('OLLAMA_HOST', `OLLAMA_HOST must be host, host:port or scheme://host:port, got \`${host}\``);
  }
  return host;
}

/** OLLAMA_MCP_HOSTS, else the one OLLAMA_HOST. */
function hostsOf(env: Env, host: string | undefined): readonly HostSpec[] {
  const hosts = parseHosts(env.OLLAMA_MCP_HOSTS, host, (a, b) => ollamaKeyOf(a) === ollamaKeyOf(b));
  if (isHostsError(hosts)) throw new ConfigError('OLLAMA_MCP_HOSTS', hosts.message);
  return hosts;
}

/** Ollama's own load timeout when this environment has it (within the setting's range), else its default of 5 minutes. */
function defaultStartTimeoutMs(env: Env): number {
  const { min, max } = SETTING_RANGES.start_timeout_ms;
  const ms = ollamaDurationMs(env, 'OLLAMA_LOAD_TIMEOUT');
  if (ms === null) return 300_000;
  return ms <= 0 ? max : Math.min(max, Math.max(min, Math.round(ms)));
}

/** OLLAMA_KEEP_ALIVE as Ollama reads it: 5 minutes by default, forever when negative. */
function keepAliveMs(env: Env): number {
  const ms = ollamaDurationMs(env, 'OLLAMA_KEEP_ALIVE');
  if (ms === null) return 300_000;
  return ms < 0 ? Infinity : ms;
}
