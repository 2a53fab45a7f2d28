import * as z from 'zod';
import { ESCALATION_REASONS, RUN_STATUSES } from '../../policy/run-status.js';
import { nextStep } from './next-step.js';
import { runMetadataSchema, runWarningSchema, savedTextSchema, type RunResult } from './run-result.js';

/** `concise`: what the agent acts on; `detailed`: that, plus the attempt's full record as `metadata`. */
export const RESPONSE_FORMATS = ['concise', 'detailed'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];

/**
 * One run as the agent reads it. Clients that show the model `structuredContent` show it this,
 * every byte paid in the agent's context: the verdict first (so a long answer cut by the client
 * never hides it), fields that are null, zero or usual left out, the answer last.
 */
export const runReplySchema = z.object({
  ok: z.boolean(),
  /** `running`: the run goes on as a job (`job_id`), past the reply budget. */
  status: z.enum([...RUN_STATUSES, 'running']),
  escalate: z.boolean(),
  job_id: z.string().optional(),
  progress: z.string().optional(),
  escalation_reason: z.enum(ESCALATION_REASONS).optional(),
  next: z.string().optional(),
  error: z.string().optional(),
  retryable: z.boolean().optional(),
  retries_left: z.number().int().optional(),
  model: z.string().optional(),
  model_available_in_seconds: z.number().int().optional(),
  cold_load_ms: z.number().int().optional(),
  warnings: z.array(runWarningSchema).optional(),
  output_file: savedTextSchema.optional(),
  thinking_file: savedTextSchema.optional(),
  output: z.string(),
  thinking: z.string().optional(),
  metadata: runMetadataSchema.optional(),
});

export type RunReply = z.infer<typeof runReplySchema>;

/**
 * The reply of a run in either format. Pure. The concise fields are read from the full metadata,
 * so both formats carry the same `escalate` and `escalation_reason`.
 */
export function toRunReply(result: RunResult, format: ResponseFormat): RunReply {
  const m = result.metadata;
  const failed = !m.ok && !m.escalate;
  const outputCut = result.output.length < m.output_chars;
  const next = nextStep(m, outputCut);
  const reply: RunReply = {
    ok: m.ok,
    status: m.status,
    escalate: m.escalate,
    ...(m.escalate && m.escalation_reason !== null ? { escalation_reason: m.escalation_reason } : {}),
    ...(next !== null ? { next } : {}),
    ...(!m.ok && m.error ? { error: m.error.message } : {}),
    ...(failed ? { retryable: m.retryable } : {}),
    ...(failed && m.retries_left !== null ? { retries_left: m.retries_left } : {}),
    ...(m.fallback.length > 0 ? { model: m.model } : {}),
    ...(m.circuit.retry_after_seconds !== null ? { model_available_in_seconds: m.circuit.retry_after_seconds } : {}),
    ...(m.cold_load && m.usage.load_ms !== null ? { cold_load_ms: Math.round(m.usage.load_ms) } : {}),
    ...(m.warnings.length > 0 ? { warnings: m.warnings } : {}),
    ...(outputCut && m.output_file ? { output_file: m.output_file } : {}),
    ...(m.thinking_file ? { thinking_file: m.thinking_file } : {}),
    output: result.output,
    thinking: result.thinking,
  };
  return format === 'detailed' ? { ...reply, metadata: m } : reply;
}
