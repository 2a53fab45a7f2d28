import type { CliRunOptions } from '../ollama/cli-args.js';
import { terminalText } from '../ollama/terminal-text.js';
import type { RunPhase } from './run-progress.js';

/** A validated `ollama_run` call. */
export interface RunRequest extends CliRunOptions {
  readonly model: string;
  readonly prompt: string;
  readonly taskId?: string;
  readonly retryCount?: number;
  readonly maxRetries?: number;
  /** Limit of the answer, from its first byte. */
  readonly timeoutMs?: number;
  /** Limit of the wait for the answer's first byte (Ollama's queue, the load, reading the prompt). */
  readonly startTimeoutMs?: number;
  readonly includeThinking?: boolean;
  /** Let the CLI pull a model that is not installed (skips the preflight check). */
  readonly allowPull?: boolean;
  /** Models tried in order when the one before cannot serve; undefined = the tier rule's chain, [] = none. */
  readonly fallbackModels?: readonly string[];
  /** The whole call (every model of the chain, busy waits included) ends within this many ms. */
  readonly deadlineMs?: number;
}

export interface RunContext {
  /** Aborts the run (client cancel, server shutdown): the process is killed, the slot freed. */
  readonly signal?: AbortSignal;
  /** Set for the jobs of one `ollama_run_many` call; logged as `batch_id`. */
  readonly batchId?: string;
  /** The batch's limit on its jobs at once (its `concurrency`), kept by the dispatcher. */
  readonly batchLimit?: number;
  /** Epoch ms: the run's timeout is cut so it ends by then (a batch deadline); it then ends as a timeout. */
  readonly deadlineAt?: number;
  /** Told each time the attempt moves along, for progress notifications. */
  readonly onPhase?: (phase: RunPhase) => void;
  /** Told the stdout bytes received so far, while the model runs. */
  readonly onOutput?: (bytes: number) => void;
  /** How many results share the reply (a batch's job count): each gets that share of its size. @default 1 */
  readonly replyShare?: number;
}

/** Is the model installed? `unknown`: the list could not be read, so the run goes ahead and speaks for itself. */
export type PreflightResult =
  | { readonly kind: 'installed' }
  | { readonly kind: 'missing'; readonly installed: readonly string[] }
  | { readonly kind: 'unknown'; readonly reason: string };

/** The task ids a store transaction for this request touches. */
export function taskScope(request: RunRequest): string[] {
  return request.taskId === undefined ? [] : [request.taskId];
}

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
