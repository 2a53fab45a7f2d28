/**
 * Inclusive ranges of the per-model settings: the same for the `OLLAMA_MCP_*` variables, the tiers
 * file and the tool arguments that override them.
 */
export const SETTING_RANGES = {
  timeout_ms: { min: 100, max: 3_600_000 },
  start_timeout_ms: { min: 1_000, max: 3_600_000 },
  max_retries: { min: 0, max: 100 },
  breaker_threshold: { min: 1, max: 1_000 },
  breaker_cooldown_ms: { min: 1_000, max: 86_400_000 },
  parallel: { min: 1, max: 32 },
} as const;

/** `reply_within_ms` and OLLAMA_MCP_REPLY_WITHIN_MS: 0 hands a job over at once; a day waits for any run to end. */
export const REPLY_WITHIN_RANGE = { min: 0, max: 86_400_000 } as const;

/** OLLAMA_MCP_CONCURRENCY: model processes at once in one server, whatever the model. */
export const CONCURRENCY_RANGE = { min: 1, max: 32 } as const;

/** OLLAMA_MCP_MAX_LOADED_MODELS: models Ollama keeps loaded together. */
export const MAX_LOADED_MODELS_RANGE = { min: 1, max: 32 } as const;

/** OLLAMA_MCP_SWITCH_AFTER_MS: how long a call for a model that is not loaded waits before the server switches models. */
export const SWITCH_AFTER_RANGE = { min: 0, max: 3_600_000 } as const;

/** OLLAMA_MCP_BUSY_RETRIES: retries inside one call after Ollama answers `server busy` or `429 ... usage limit`. */
export const BUSY_RETRIES_RANGE = { min: 0, max: 10 } as const;

/** OLLAMA_MCP_SHARED_CONCURRENCY: model processes at once across every server sharing the state dir. */
export const SHARED_CONCURRENCY_RANGE = { min: 1, max: 256 } as const;

/** OLLAMA_MCP_HTTP_TOKEN's shortest length, checked by the config and by the HTTP server itself. */
export const HTTP_TOKEN_MIN_CHARS = 16;
export const HTTP_TOKEN_TOO_SHORT = `OLLAMA_MCP_HTTP_TOKEN must be at least ${HTTP_TOKEN_MIN_CHARS} characters (use a random secret)`;

/**
 * OLLAMA_MCP_HTTP_MAX_CONNECTIONS and OLLAMA_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: connections to
 * `--http` serving no request at most, in total and from one remote address (each holds a file descriptor).
 */
export const HTTP_CONNECTIONS = { total: 256, perAddress: 128 } as const;
export const HTTP_CONNECTIONS_RANGE = { min: 1, max: 100_000 } as const;

/** The port `--http` serves on when none is given (`startHttpServer`'s own default is 0: any free port). */
export const DEFAULT_HTTP_PORT = 3333;

/** OLLAMA_MCP_STATE_PREFIX when unset: every Redis key of the shared state starts with it. */
export const DEFAULT_STATE_PREFIX = 'ollama-mcp:';
/** 1-100 printable characters, no spaces (a key prefix that can be typed in redis-cli). */
export const STATE_PREFIX_PATTERN = /^[\x21-\x7e]{1,100}$/;
export const STATE_PREFIX_RULE = 'must be 1 to 100 printable characters without spaces (e.g. `team-a:`)';
