import * as z from 'zod';
import { ESCALATION_REASONS, RUN_STATUSES } from '../../policy/run-status.js';

/** The model's circuit as the caller sees it. */
export const circuitViewSchema = z.object({
  state: z
    .enum(['closed', 'open', 'half_open'])
    .describe('closed: runs go through; open: refused until retry_after_seconds; half_open: one probe run decides'),
  consecutive_failures: z.number().int().describe('model failures in a row (any task)'),
  retry_after_seconds: z
    .number()
    .int()
    .nullable()
    .describe('seconds until the model accepts runs again; null when it accepts them now'),
});

/**
 * Why the safety net did less than usual for this attempt:
 * - `ledger_not_updated`: the attempt could not be recorded (read-only or full disk...); retry_count
 *   and escalation come from the ledger as last saved, which will not count this attempt.
 * - `ledger_unreadable`: the ledger could not even be read; retry_count is the caller's own.
 * - `circuit_not_updated`: the circuit could not be updated at admission; it was judged from the
 *   last saved state.
 * - `prompt_may_be_truncated`: the prompt's token count reached the context size the model ran
 *   with, so Ollama probably kept only the end of it (see policy/prompt-fit.ts).
 * - `answer_not_saved`: the answer was too large for the reply and could not be kept whole in a
 *   file either (full or read-only disk): the caller has only the part the reply carries.
 * - `not_counted`: the failure was this server's own misjudgement (it sent the model to Ollama beside
 *   busy models it only guessed would fit, and Ollama held it back): recorded, not counted for the task.
 */
const RUN_WARNING_KINDS = [
  'ledger_not_updated',
  'ledger_unreadable',
  'circuit_not_updated',
  'prompt_may_be_truncated',
  'answer_not_saved',
  'not_counted',
] as const;

export const runWarningSchema = z.object({
  kind: z.enum(RUN_WARNING_KINDS),
  message: z.string(),
});

export type RunWarning = z.infer<typeof runWarningSchema>;

/** A text kept whole in a file because the reply carries only its start. */
export const savedTextSchema = z.object({
  path: z.string(),
  chars: z.number().int(),
  bytes: z.number().int(),
});

/** A model of a fallback chain that could not serve the call, before the one that produced the result. */
export const fallbackEntrySchema = z.object({
  model: z.string(),
  status: z.enum(RUN_STATUSES).describe('how its attempt ended'),
  run_id: z.string().describe("its attempt's runs.jsonl line"),
});

export type FallbackEntry = z.infer<typeof fallbackEntrySchema>;

/** Token usage the CLI reported (`ollama run --verbose`); every field null when it reported nothing. */
const runUsageSchema = z
  .object({
    prompt_tokens: z.number().int().nullable().describe('tokens of the prompt the model read (after any truncation)'),
    output_tokens: z.number().int().nullable().describe('tokens generated (thinking included)'),
    tokens_per_second: z.number().nullable().describe('generation speed (eval rate)'),
    prompt_tokens_per_second: z.number().nullable().describe('prompt reading speed (prompt eval rate)'),
    load_ms: z.number().nullable().describe('model load time; a large one means a cold load'),
    total_ms: z.number().nullable().describe("the server's own total time for the request"),
  })
  .describe('null fields when the CLI reported nothing (timeout, error, an old CLI, nothing run)');

/** What every `ollama_run` result carries, success or failure. */
export const runMetadataSchema = z.object({
  status: z.enum(RUN_STATUSES).describe('how the attempt ended; see the README failure table'),
  ok: z.boolean().describe('true only when status is "ok"'),
  escalate: z.boolean().describe('true: STOP retrying this task and hand it upwards (human or stronger model)'),
  escalation_reason: z.enum(ESCALATION_REASONS).nullable(),
  retryable: z.boolean().describe('may repeating the same call succeed (after retry_after_seconds, if set)?'),
  model: z.string(),
  task_id: z.string().nullable(),
  run_id: z.string(),
  retry_count: z.number().int().describe('failed attempts of this task before this one'),
  max_retries: z.number().int().describe('0 means no limit'),
  retries_left: z.number().int().nullable().describe('failed attempts still allowed before escalation; null when unlimited'),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  timed_out: z.boolean(),
  truncated: z.boolean().describe('the output passed the size cap and was cut'),
  duration_ms: z.number().int().describe('spawn to exit; 0 when nothing was spawned'),
  queue_ms: z.number().int().describe("time spent waiting in this server's queue"),
  start_ms: z
    .number()
    .int()
    .nullable()
    .describe("spawn to the answer's first byte: Ollama's queue, the load, reading the prompt; null when no answer began"),
  timeout_ms: z.number().int().nullable().describe('limit of the answer, from its first byte'),
  start_timeout_ms: z.number().int().nullable().describe('limit of the wait for the first byte'),
  cold_load: z.boolean().describe('the model was loaded for this call (usage.load_ms)'),
  prompt_chars: z.number().int(),
  output_chars: z.number().int(),
  thinking_chars: z.number().int(),
  usage: runUsageSchema,
  circuit: circuitViewSchema,
  error: z
    .object({ kind: z.enum(RUN_STATUSES), message: z.string() })
    .nullable()
    .describe('why the attempt failed; null on success'),
  warnings: z
    .array(runWarningSchema)
    .describe(
      'empty normally; otherwise the retry ledger or the circuit could not be updated for this attempt, so retry_count and escalation may lag, or (prompt_may_be_truncated) the prompt probably did not fit the context window: read each message',
    ),
  chain_id: z.string().nullable().describe("shared by every model's runs.jsonl line of this call; null without a fallback chain"),
  fallback: z
    .array(fallbackEntrySchema)
    .describe('the models of the fallback chain tried before `model`, in order, and how each ended; [] when none'),
  busy_retries: z
    .number()
    .int()
    .describe(
      'retries inside this call after Ollama answered "server busy" (503) or "usage limit" (429), or the CLI could not be started (spawn_failed)',
    ),
  output_file: savedTextSchema
    .nullable()
    .describe('the whole answer, when the reply carries only its start (in output, or in the text content); else null'),
  thinking_file: savedTextSchema.nullable().describe('the whole thinking text, when `thinking` carries only its start'),
});

export type RunMetadata = z.infer<typeof runMetadataSchema>;

export const runResultSchema = z.object({
  output: z.string().describe("the model's answer (partial when timed out or truncated; empty when nothing ran)"),
  thinking: z.string().optional().describe('the thinking text, only when include_thinking was true'),
  metadata: runMetadataSchema,
});

export type RunResult = z.infer<typeof runResultSchema>;
