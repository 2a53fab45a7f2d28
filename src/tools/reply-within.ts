/**
 * How long a client waits for a `tools/call` before it gives up and cancels it (measured with the real
 * clients, docs/long-runs.md): by the name it gives itself in `initialize` (`clientInfo.name`).
 * Progress notifications extend none of these but Claude Code's idle limit.
 */
export const CLIENT_LIMITS_MS: ReadonlyMap<string, number> = new Map(
  Object.entries({
    // Codex CLI: DEFAULT_TOOL_TIMEOUT (tool_timeout_sec), 300 s.
    'codex-mcp-client': 300_000,
    // Gemini CLI: MCP_DEFAULT_TIMEOUT_MSEC, 600 s.
    'gemini-cli-mcp-client': 600_000,
    // Claude Desktop: "No result received ... after waiting 4 minutes" (user reports).
    'claude-ai': 240_000,
    // VS Code (Copilot Chat): cancels reported at about 5 min.
    'Visual Studio Code': 300_000,
    // Cursor: cancels reported at 5 min.
    'cursor-vscode': 300_000,
    // Claude Code: about 27.8 h, and an idle limit (30 min on stdio) that the heartbeats reset.
    'claude-code': 30 * 60_000,
  }),
);

/** The TypeScript SDK's Client (the Inspector, custom agents): 60 s, which any unknown client is assumed to keep. */
export const UNKNOWN_CLIENT_LIMIT_MS = 60_000;

/**
 * Within how long to answer: the caller's `reply_within_ms`, else OLLAMA_MCP_REPLY_WITHIN_MS, else
 * the client's own limit (by its name) less a margin, else what is safe under the TypeScript SDK's 60 s.
 */
export function replyWithinMs(argument: number | undefined, configured: number | null, clientName: string | undefined): number {
  if (argument !== undefined) return argument;
  if (configured !== null) return configured;
  const limit = (clientName !== undefined ? CLIENT_LIMITS_MS.get(clientName) : undefined) ?? UNKNOWN_CLIENT_LIMIT_MS;
  // Answer before the client's limit: the reply must travel, and a clock may run slow.
  return limit - Math.max(10_000, Math.round(limit / 10));
}
