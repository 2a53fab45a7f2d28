/** Inclusive ranges of the per-model settings, the same for the variables, the tiers file and the tool arguments. */
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

/** OLLAMA_MCP_HTTP_TOKEN's shortest length, checked by the config and by the HTTP server itself. */
export const HTTP_TOKEN_MIN_CHARS = 16;
export const HTTP_TOKEN_TOO_SHORT = `OLLAMA_MCP_HTTP_TOKEN must be at least ${HTTP_TOKEN_MIN_CHARS} characters (use a random secret)`;

/** Connections to `--http` serving no request at most, in total and from one address (each holds a file descriptor). */
export const HTTP_CONNECTIONS = { total: 256, perAddress: 128 } as const;

/** The port `--http` serves on when none is given (`startHttpServer`'s own default is 0: any free port). */
export const DEFAULT_HTTP_PORT = 3333;
