import { terminalText } from '../../ollama/terminal-text.js';
import type { RunRequest } from './types.js';

/**
 * What can be logged of invalid arguments: the usable strings (cut short) and numbers, nothing else.
 * The model and task id, which readers print (`jq -r`, the report), carry no control or bidi
 * character: each is written as its escape (`\x1b`, `\u202e`; see `terminalText`), so an escape
 * planted by a caller is shown, never obeyed by a terminal.
 */
export function salvageRequest(rawArgs: unknown): { request: RunRequest; maxRetries: number | undefined; retryCount: number } {
  const args = (typeof rawArgs === 'object' && rawArgs !== null ? rawArgs : {}) as Record<string, unknown>;
  const text = (value: unknown, max: number) => (typeof value === 'string' ? terminalText(value.slice(0, max)) : '');
  const taskId = text(args.task_id, 200);
  return {
    request: {
      model: text(args.model, 200),
      prompt: typeof args.prompt === 'string' ? args.prompt.slice(0, 10_000_000) : '',
      ...(taskId ? { taskId } : {}),
    },
    maxRetries: typeof args.max_retries === 'number' ? args.max_retries : undefined,
    retryCount: typeof args.retry_count === 'number' ? args.retry_count : 0,
  };
}
