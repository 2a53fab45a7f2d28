import * as z from 'zod';
import type { AnyToolDefinition, ControlLogger, ToolOutcome } from './tool-definition.js';
import { ESCALATION_REASONS, RUN_STATUSES } from '../policy/run-status.js';
import { retryCountFor, type TaskLedgerEntry } from '../policy/task-ledger.js';
import type { StateBackend } from '../store/state-backend.js';
import { RESPONSE_FORMAT_FIELD, requestedFormat, TASK_ID_VALUE } from './shared-fields.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';

export const taskStatusSchema = z.object({
  task_id: z.string(),
  known: z.boolean().describe('false: the server has no record of this task and runs none of it (never run, reset, or pruned)'),
  in_flight: z
    .number()
    .int()
    .describe('attempts of the task under way now (any server on this data dir): their verdicts are not counted yet'),
  attempts: z.number().int().describe('attempts recorded, rejected ones included'),
  failures: z.number().int().describe('failed attempts since the last success: the retry_count of the next attempt'),
  total_failures: z.number().int(),
  last_status: z.enum(RUN_STATUSES).nullable(),
  last_model: z.string().nullable(),
  last_run_id: z.string().nullable(),
  escalated: z.boolean().describe('did the last attempt tell the caller to escalate?'),
  escalation_reason: z.enum(ESCALATION_REASONS).nullable(),
  blocked: z.boolean().describe('true when OLLAMA_MCP_ESCALATION=block refuses further runs until ollama_reset'),
  first_seen: z.string().nullable(),
  updated_at: z.string().nullable(),
});

type TaskStatus = z.infer<typeof taskStatusSchema>;

/**
 * The concise status keeps what the agent acts on (failures in a row, the last outcome, whether
 * the task escalated or is blocked, and what to do then); `detailed` is the whole record.
 */
const taskStatusReplySchema = taskStatusSchema
  .partial()
  .required({ task_id: true, known: true, escalated: true })
  .extend({ next: z.string().optional() });

type TaskStatusReply = z.infer<typeof taskStatusReplySchema>;

function toTaskStatusReply(status: TaskStatus, format: ResponseFormat): TaskStatusReply {
  const next = status.escalated
    ? `Stop: do not run this task again; escalate it to a human or a stronger model (${status.escalation_reason}). After a human fixed the cause, ollama_reset clears it.`
    : status.in_flight > 0
      ? `${status.in_flight} attempt(s) of this task are under way: their verdicts are not counted yet; read the status again when they end.`
      : null;
  if (format === 'detailed') return { ...status, ...(next !== null ? { next } : {}) };
  return {
    task_id: status.task_id,
    known: status.known,
    ...(status.in_flight > 0 ? { in_flight: status.in_flight } : {}),
    ...(status.failures > 0 ? { failures: status.failures } : {}),
    ...(status.last_status !== null ? { last_status: status.last_status } : {}),
    ...(status.last_model !== null ? { last_model: status.last_model } : {}),
    escalated: status.escalated,
    ...(status.escalated && status.escalation_reason !== null ? { escalation_reason: status.escalation_reason } : {}),
    ...(status.blocked ? { blocked: true } : {}),
    ...(next !== null ? { next } : {}),
  };
}

export function describeTask(taskId: string, entry: TaskLedgerEntry | undefined, blockMode: boolean, inFlight = 0): TaskStatus {
  return {
    task_id: taskId,
    known: entry !== undefined || inFlight > 0,
    in_flight: inFlight,
    attempts: entry?.attempts ?? 0,
    failures: retryCountFor(entry, undefined),
    total_failures: entry?.totalFailures ?? 0,
    last_status: entry?.lastStatus ?? null,
    last_model: entry?.lastModel ?? null,
    last_run_id: entry?.lastRunId ?? null,
    escalated: entry?.escalated ?? false,
    escalation_reason: entry?.escalationReason ?? null,
    blocked: blockMode && (entry?.escalated ?? false),
    first_seen: entry ? new Date(entry.firstSeenAt).toISOString() : null,
    updated_at: entry ? new Date(entry.updatedAt).toISOString() : null,
  };
}

function render(status: TaskStatus): string {
  if (!status.known)
    return `Task "${status.task_id}": no record (never run, reset, or pruned). Its next attempt has retry_count 0.`;
  const underWay =
    status.in_flight > 0
      ? [`${status.in_flight} attempt(s) under way now: not counted yet; read the status again when they end.`]
      : [];
  if (status.attempts === 0) return [`Task "${status.task_id}": no attempt recorded yet.`, ...underWay].join('\n');
  return [
    `Task "${status.task_id}": ${status.attempts} attempt(s), ${status.failures} failure(s) in a row (${status.total_failures} in all).`,
    `Last: ${status.last_status} on ${status.last_model} at ${status.updated_at}.`,
    status.escalated
      ? `ESCALATED (${status.escalation_reason})${status.blocked ? '; further runs are BLOCKED until ollama_reset' : ''}.`
      : 'Not escalated.',
    ...underWay,
  ].join('\n');
}

export function ollamaTaskStatusTool(deps: {
  /** Opened on the first call (see App.services). */
  store: () => Promise<StateBackend>;
  /** Attempts of a task under way now (app/run-service.ts). */
  inFlight: (taskId: string) => Promise<number>;
  blockMode: boolean;
  logControl: ControlLogger;
}): AnyToolDefinition {
  const unknown = (taskId: string, format: ResponseFormat): ToolOutcome<TaskStatusReply> => {
    const status = describeTask(taskId, undefined, deps.blockMode);
    return { structured: toTaskStatusReply(status, format), text: render(status), isError: true };
  };
  return {
    name: 'ollama_task_status',
    title: "A task's record",
    description:
      "A task's record: failures in a row (its next retry_count), the last status and model, whether it escalated or is blocked. Runs nothing.",
    inputSchema: z.strictObject({ task_id: TASK_ID_VALUE, response_format: RESPONSE_FORMAT_FIELD }),
    outputSchema: taskStatusReplySchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle({ task_id, response_format }: { task_id: string; response_format?: ResponseFormat }) {
      const format = response_format ?? 'concise';
      let status: TaskStatus;
      try {
        // In flight first: an attempt that ends meanwhile is then in the snapshot.
        const inFlight = await deps.inFlight(task_id);
        const state = await (await deps.store()).snapshot([task_id]);
        status = describeTask(task_id, state.tasks[task_id], deps.blockMode, inFlight);
      } catch (error) {
        const outcome = unknown(task_id, format);
        const why = `the retry ledger cannot be read (${(error as Error).message}); the task's record is unknown, not absent. Fix the telemetry dir (see ollama_health).`;
        return { ...outcome, text: `FAILED: ${why}` };
      }
      await deps.logControl({
        tool: 'ollama_task_status',
        task_id,
        model: null,
        action: 'status',
        detail: status.known ? `${status.failures} failure(s) in a row` : 'unknown task',
      });
      return { structured: toTaskStatusReply(status, format), text: render(status), isError: false };
    },
    async onInvalidInput(problem, raw) {
      const taskId = (raw as { task_id?: unknown } | null)?.task_id;
      const outcome = unknown(typeof taskId === 'string' ? taskId.slice(0, 128) : '', requestedFormat(raw));
      return { ...outcome, text: `REJECTED: ${problem}` };
    },
  };
}
