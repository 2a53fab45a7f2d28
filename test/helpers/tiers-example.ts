/** The tiers file example of docs/configuration.md (docs.test.ts checks they are the same); valid. */
export const EXAMPLE_TIERS_JSON = `{
  "defaults": { "timeout_ms": 120000, "max_retries": 3 },
  "tiers": {
    "quick":     { "timeout_ms": 30000,  "max_retries": 2 },
    "standard":  { "timeout_ms": 120000, "max_retries": 3 },
    "reasoning": { "timeout_ms": 600000, "start_timeout_ms": 600000, "max_retries": 1, "breaker_threshold": 3, "breaker_cooldown_ms": 300000 }
  },
  "models": [
    { "match": "deepseek-r1*", "tier": "reasoning" },
    { "match": "*:70b", "tier": "reasoning", "timeout_ms": 900000 },
    { "match": "qwen2.5-coder:1.5b", "tier": "quick", "fallback": ["llama3.2:3b"] }
  ]
}
`;
