import { modelKeyOf } from '../../ollama/model-name.js';
import type { CircuitTransition } from '../../policy/breaker-state.js';
import { OUTCOME_POLICY } from '../../policy/outcome-policy.js';
import type { RunStatus } from '../../policy/run-status.js';
import type { RunMetadata, RunWarning } from '../reply/run-result.js';
import type { SavedText } from '../reply/answer-files.js';
import type { Classification } from '../../ollama/classify-outcome.js';
import type { ProcessOutcome } from '../../ollama/model-process.js';
import { NO_USAGE, type RunUsage } from '../../ollama/verbose-stats.js';
import { RUN_RECORD_SCHEMA_VERSION, type RunRecord } from '../../telemetry/run-record.js';
import type { RunRequest, Settled, Step } from './types.js';

const ERROR_TEXT_MAX = 500;
/** A `load duration` this long means the model was loaded for the call (a loaded model reports 0 or a few ms). */
const COLD_LOAD_MS = 100;

/** Everything known about one attempt when it is written up. */
export interface WriteUp {
  readonly runId: string;
  readonly request: RunRequest;
  readonly timeoutMs: number | null;
  readonly startTimeoutMs: number | null;
  readonly maxRetries: number;
  readonly status: RunStatus;
  readonly settled: Settled;
  readonly classification: Classification;
  readonly outcome?: ProcessOutcome | undefined;
  readonly queueMs?: number | undefined;
  /** What the CLI reported (`--verbose`); none when nothing ran. */
  readonly usage?: RunUsage | undefined;
  /** Where the attempt stands in its call; absent for one refused before its call began (invalid arguments). */
  readonly step?: Pick<Step, 'chainId' | 'chainStep' | 'busyTry' | 'tried' | 'busyRetries'> | undefined;
  /** The call goes on after this attempt (a busy retry, or the next model): the caller never sees it. */
  readonly willRetry: boolean;
  /** The prompt's length when its text is not at hand (an attempt settled by another server). */
  readonly promptChars?: number | undefined;
  /** The Ollama host it was sent to; null or absent: it reached none. */
  readonly host?: string | null;
}

/** Texts of an attempt kept in files because the reply carries only their start. */
interface SavedTexts {
  readonly output: SavedText | null;
  readonly thinking: SavedText | null;
}

const NO_FILES: SavedTexts = { output: null, thinking: null };

/** The result's metadata of an attempt. Pure. */
export function toRunMetadata(attempt: WriteUp, warnings: RunWarning[], files: SavedTexts = NO_FILES): RunMetadata {
  const { request, settled, outcome, status, classification, maxRetries } = attempt;
  const policy = OUTCOME_POLICY[status];
  const standing = settled.standing ?? status;
  const errorText = classification.error?.slice(0, ERROR_TEXT_MAX) ?? null;
  return {
    status,
    ok: policy.ok,
    escalate: settled.escalation.escalate,
    escalation_reason: settled.escalation.reason,
    retryable: OUTCOME_POLICY[standing].retryable && !settled.escalation.escalate,
    model: request.model,
    task_id: request.taskId ?? null,
    run_id: attempt.runId,
    retry_count: settled.retryCount,
    max_retries: maxRetries,
    retries_left:
      settled.escalation.escalate && maxRetries > 0
        ? 0
        : retriesLeft(maxRetries, settled.retryCount, standing, settled.excused === true),
    exit_code: outcome?.exitCode ?? null,
    signal: outcome?.signal ?? null,
    timed_out: outcome?.timedOut ?? false,
    truncated: outcome?.truncated ?? false,
    duration_ms: outcome?.durationMs ?? 0,
    queue_ms: attempt.queueMs ?? 0,
    start_ms: outcome?.startMs ?? null,
    timeout_ms: attempt.timeoutMs,
    start_timeout_ms: attempt.startTimeoutMs,
    cold_load: (attempt.usage?.load_ms ?? 0) >= COLD_LOAD_MS,
    prompt_chars: attempt.promptChars ?? request.prompt.length,
    output_chars: classification.answer.length,
    thinking_chars: classification.thinking.length,
    usage: attempt.usage ?? { ...NO_USAGE },
    circuit: settled.circuit,
    error: errorText === null ? null : { kind: status, message: errorText },
    warnings,
    chain_id: attempt.step?.chainId ?? null,
    fallback: (attempt.step?.tried ?? []).map(({ model, status, run_id }) => ({ model, status, run_id })),
    busy_retries: attempt.step?.busyRetries ?? 0,
    output_file: files.output,
    thinking_file: files.thinking,
  };
}

/** Fields a runs.jsonl record carries exactly as the metadata has them, in the record's order. */
const FROM_METADATA = [
  'task_id',
  'status',
  'exit_code',
  'signal',
  'timed_out',
  'truncated',
  'duration_ms',
  'queue_ms',
  'start_ms',
  'timeout_ms',
  'start_timeout_ms',
  'prompt_chars',
  'output_chars',
  'thinking_chars',
  'usage',
  'retry_count',
  'max_retries',
  'escalate',
  'escalation_reason',
] as const satisfies readonly (keyof RunMetadata & keyof RunRecord)[];

/** What a record knows beyond the result's metadata. */
interface RecordContext {
  readonly ts: number;
  readonly batchId: string | null;
  readonly tool: string;
  readonly transition: CircuitTransition;
  readonly prompt: string;
  readonly output: string;
  readonly serverPid: number;
  /** The Ollama host it was sent to; null or absent: none. */
  readonly host?: string | null;
  /** The attempt's place in its call. */
  readonly step?: { readonly chainStep: number | null; readonly busyTry: number; readonly willRetry: boolean };
  /** Characters of the output (and thinking, when asked for) the reply carries. @default all of them */
  readonly returned?: { readonly outputChars: number; readonly thinkingChars: number | null };
}

/** The runs.jsonl line of an attempt, from its result's metadata. Pure. */
export function toRunRecord(metadata: RunMetadata, context: RecordContext): RunRecord {
  const shared = Object.fromEntries(FROM_METADATA.map((field) => [field, metadata[field]])) as Pick<
    RunMetadata,
    (typeof FROM_METADATA)[number]
  >;
  return {
    v: RUN_RECORD_SCHEMA_VERSION,
    ts: new Date(context.ts).toISOString(),
    run_id: metadata.run_id,
    batch_id: context.batchId,
    chain_id: metadata.chain_id,
    chain_step: context.step?.chainStep ?? null,
    tool: context.tool,
    model: metadata.model,
    model_key: modelKeyOf(metadata.model),
    ...shared,
    busy_try: context.step?.busyTry ?? 0,
    will_retry: context.step?.willRetry ?? false,
    circuit: { ...metadata.circuit, transition: context.transition },
    error: metadata.error?.message ?? null,
    server_pid: context.serverPid,
    ...(context.host ? { host: context.host } : {}),
    warnings: metadata.warnings,
    ...receivedFields(metadata, context.returned),
    prompt: context.prompt,
    output: context.output,
  };
}

/** What the caller received of a large answer: present only when the reply cut something. */
function receivedFields(metadata: RunMetadata, returned: RecordContext['returned']): Partial<RunRecord> {
  const fields: { -readonly [K in keyof RunRecord]?: RunRecord[K] } = {};
  if (returned && returned.outputChars < metadata.output_chars) fields.returned_output_chars = returned.outputChars;
  if (metadata.output_file) fields.output_file = metadata.output_file.path;
  if (returned && returned.thinkingChars !== null && returned.thinkingChars < metadata.thinking_chars) {
    fields.returned_thinking_chars = returned.thinkingChars;
  }
  if (metadata.thinking_file) fields.thinking_file = metadata.thinking_file.path;
  return fields;
}

/**
 * Further attempts the caller may make before a failure escalates: with `max_retries: 3`, a first
 * failed attempt leaves 3 (retry_count 1, 2 and 3; the last escalates if it fails too).
 */
function retriesLeft(maxRetries: number, retryCount: number, status: RunStatus, excused: boolean): number | null {
  if (maxRetries === 0) return null;
  const policy = OUTCOME_POLICY[status];
  const nextRetryCount = policy.ok ? 0 : policy.countsAsTaskFailure && !excused ? retryCount + 1 : retryCount;
  return Math.min(maxRetries, Math.max(0, maxRetries - nextRetryCount + 1));
}
