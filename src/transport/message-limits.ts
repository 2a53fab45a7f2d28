/**
 * The largest JSON-RPC message the server reads, on stdio (one line) and over HTTP (one body).
 *
 * It must hold every call the tool schemas allow, encoded as a client's `JSON.stringify` would:
 * the worst case is an `ollama_run_many` with prompts totalling MAX_BATCH_PROMPT_CHARS characters
 * that each take 6 bytes (`\u0001`), plus 100 jobs with the largest `format` schema
 * (test/unit/transport/message-limits.test.ts builds that call and checks it fits). It stays well
 * below 50 MB, so a runaway body is still refused at once.
 */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** `33554432 bytes (32 MiB)`: how an error names the limit. */
export function describeByteLimit(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return `${bytes} bytes (${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB)`;
}
