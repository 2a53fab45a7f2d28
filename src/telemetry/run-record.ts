import type { CircuitName, CircuitTransition } from '../policy/breaker-state.js';
import type { EscalationReason, RunStatus } from '../policy/run-status.js';
import type { RunUsage } from '../ollama/verbose-stats.js';

/**
 * Bumped when a field changes meaning or disappears, or when readers must know a field is always
 * there. 2: `usage` (always present), the `prompt_may_be_truncated` warning. Readers accept 1 and 2.
 */
export const RUN_RECORD_SCHEMA_VERSION = 2;

/** One line of runs.jsonl: one attempt, rejected ones included (field by field in telemetry/README.md). */
export interface RunRecord {
  readonly v: typeof RUN_RECORD_SCHEMA_VERSION;
  /** ISO 8601 time the attempt finished (or was rejected). */
  readonly ts: string;
  readonly run_id: string;
  /** Set when the attempt was one job of an `ollama_run_many` call. */
  readonly batch_id: string | null;
  /** Shared by every model's attempt of a call with a fallback chain; null without one. Absent from older lines. */
  readonly chain_id?: string | null;
  /** 0 for the chain's first model, 1 for the next...; null without a chain. Absent from older lines. */
  readonly chain_step?: number | null;
  readonly tool: string;
  /** The model name as given (cut to 200 characters when the input was invalid). */
  readonly model: string;
  /** The canonical name (`llama3.2:latest`): the circuit's key and the report's row; group by this. Absent from older lines. */
  readonly model_key: string;
  readonly task_id: string | null;
  readonly status: RunStatus;
  readonly exit_code: number | null;
  /** Signal that ended the CLI process, if it died by one. */
  readonly signal: string | null;
  readonly timed_out: boolean;
  readonly truncated: boolean;
  /** Wall time from spawn to exit (0 when nothing was spawned). */
  readonly duration_ms: number;
  /** Wall time spent waiting in this server's queue (and for a shared slot). */
  readonly queue_ms: number;
  /** Spawn to the first byte of answer (Ollama's queue, the load, reading the prompt); null when no answer began. Absent from older lines. */
  readonly start_ms?: number | null;
  /** The limit of the answer, from its first byte. */
  readonly timeout_ms: number | null;
  /** The limit of the wait for the first byte. Absent from older lines. */
  readonly start_timeout_ms?: number | null;
  readonly prompt_chars: number;
  readonly output_chars: number;
  readonly thinking_chars: number;
  /** Token usage the CLI reported, as in the result's `metadata.usage` (each field null when none). Missing from v1 lines. */
  readonly usage: RunUsage;
  readonly retry_count: number;
  readonly max_retries: number;
  readonly escalate: boolean;
  readonly escalation_reason: EscalationReason | null;
  /** 0 for a model's first attempt in the call, n for its n-th retry after `server_busy`. Absent from older lines. */
  readonly busy_try?: number;
  /** The server went on after this line (a busy retry, or the chain's next model): not the caller's result. Absent from older lines. */
  readonly will_retry?: boolean;
  readonly circuit: {
    readonly state: CircuitName;
    readonly consecutive_failures: number;
    readonly retry_after_seconds: number | null;
    readonly transition: CircuitTransition;
  };
  /** Short error text (at most 500 characters), `null` on success. */
  readonly error: string | null;
  /** PID of the server process that ran the attempt (several may share one log). */
  readonly server_pid: number;
  /** The Ollama host the attempt was sent to (OLLAMA_MCP_HOSTS's name; `127.0.0.1:11434` when OLLAMA_HOST is unset). Absent when it never reached one, and from older lines. */
  readonly host?: string;
  /** What the safety net could not do, or `prompt_may_be_truncated`, as in the result's `metadata.warnings`; `[]` normally. */
  readonly warnings: readonly { readonly kind: string; readonly message: string }[];
  /** Characters of the answer the reply carried, when it could not carry all `output_chars` (the rest is in `output_file`). */
  readonly returned_output_chars?: number;
  /** The file keeping the whole answer, when the reply (its structured or its text content) carried only its start. */
  readonly output_file?: string;
  /** As `returned_output_chars`, for the thinking text a call asked for (`include_thinking`). */
  readonly returned_thinking_chars?: number;
  /** As `output_file`, for the thinking text. */
  readonly thinking_file?: string;
  /** Only with OLLAMA_MCP_LOG_CONTENT=1. */
  readonly prompt?: string;
  /** Only with OLLAMA_MCP_LOG_CONTENT=1. */
  readonly output?: string;
}

/** A control action, logged beside the runs (told apart by `kind`) so a reviewer sees who cleared what and when. */
export interface ControlRecord {
  readonly v: typeof RUN_RECORD_SCHEMA_VERSION;
  readonly kind: 'control';
  readonly ts: string;
  readonly tool: 'ollama_reset' | 'ollama_task_status';
  readonly action: 'status' | 'reset_task' | 'reset_circuit';
  readonly task_id: string | null;
  readonly model: string | null;
  /** What was found or changed, in words. */
  readonly detail: string;
  readonly server_pid: number;
}

/** A control action worth a line in runs.jsonl, before the writer stamps it. */
export type ControlEvent = Omit<ControlRecord, 'v' | 'kind' | 'ts' | 'server_pid'>;
