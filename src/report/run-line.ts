import { modelKeyOf } from '../ollama/model-name.js';
import type { JsonObject } from '../telemetry/jsonl-reader.js';

// The fields of a line the summary reads, each of the type it needs. The log is taken as it is: a
// missing or mistyped field is absent (`null`, `NaN`, `false`), never an error.

export type RunLine = Readonly<NonNullable<ReturnType<typeof readRunLine>>>;
export type ControlLine = Readonly<ReturnType<typeof readControlLine>>;

/** Latest `ts` taken as real: 9999-12-31T23:59:59.999Z. */
const MAX_TS_MS = 253_402_300_799_999;

/** The run line, or null when the record is not a run (no string `model` and `status`). */
export function readRunLine(record: JsonObject) {
  const { model, status, duration_ms: duration, queue_ms: queue, retry_count: retryCount } = record;
  if (typeof model !== 'string' || model === '' || typeof status !== 'string' || status === '') return null;
  const circuit = objectOrNull(record.circuit);
  const transition = circuit?.transition;
  return {
    /** Canonical model name (the circuit's key), or the name as logged when it is not a model name. */
    model: modelKeyOf(model),
    loggedModel: model,
    status,
    /** Epoch milliseconds of `ts`, or NaN when it is missing or not a time from 1970 to 9999. */
    tsMs: tsMsOf(record.ts),
    taskId: nonEmptyString(record.task_id),
    escalate: record.escalate === true,
    reason: typeof record.escalation_reason === 'string' ? record.escalation_reason : null,
    error: typeof record.error === 'string' ? record.error : null,
    /** `will_retry`: the server went on after this line (a busy retry, a chain's next model); the caller never saw it. */
    willRetry: record.will_retry === true,
    circuit,
    /** `"opened"` or `"reopened"` when this run opened its model's circuit, else null. */
    opening: transition === 'opened' || transition === 'reopened' ? transition : null,
    /** `duration_ms` when positive (a process ran), else null. */
    spawnedMs: typeof duration === 'number' && duration > 0 ? duration : null,
    queueMs: typeof queue === 'number' ? queue : null,
    usage: objectOrNull(record.usage),
    /** `cold_load` when the line has it: the model was loaded for this attempt. Null when absent or mistyped. */
    coldLoad: typeof record.cold_load === 'boolean' ? record.cold_load : null,
    /** A `prompt_may_be_truncated` warning is among `warnings`. */
    mayBeTruncated: Array.isArray(record.warnings) && record.warnings.some(isTruncationWarning),
    /** `retry_count`, 0 when absent or negative. */
    retryCount: typeof retryCount === 'number' && retryCount >= 0 ? retryCount : 0,
    /** `host`: the Ollama host the attempt was sent to; null when absent (one host, older lines). */
    host: nonEmptyString(record.host),
    chainId: record.chain_id,
    busyTry: record.busy_try,
  };
}

/** A control record's fields: a reset or status look-up logged beside the runs. */
export function readControlLine(record: JsonObject) {
  const model = nonEmptyString(record.model);
  return {
    action: record.action,
    taskId: nonEmptyString(record.task_id),
    /** Canonical model name, or null. */
    model: model === null ? null : modelKeyOf(model),
    tsMs: tsMsOf(record.ts),
  };
}

function tsMsOf(ts: unknown): number {
  const ms = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
  return ms >= 0 && ms <= MAX_TS_MS ? ms : Number.NaN;
}

function nonEmptyString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function objectOrNull(value: unknown): Readonly<Record<string, unknown>> | null {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
}

function isTruncationWarning(warning: unknown): boolean {
  return objectOrNull(warning)?.kind === 'prompt_may_be_truncated';
}
