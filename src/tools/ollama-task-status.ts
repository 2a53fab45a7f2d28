import * as z from 'zod';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';
import { ESCALATION_REASONS, RUN_STATUSES } from '../policy/run-status.js';
import { retryCountFor, type TaskLedgerEntry } from '../policy/task-ledger.js';
import type { StateBackend } from '../store/state-backend.js';
import { TASK_ID_FIELD } from './shared-fields.js';
import type { ControlLogger } from './control-log.js';

export const taskStatusSchema = z.object({
  task_id: z.string(),
  known: z.boolean().describe('false: the server has no record of this task (never run, reset, or pruned)'),
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

export type TaskStatus = z.infer<typeof taskStatusSchema>;

export function describeTask(taskId: string, entry: TaskLedgerEntry | undefined, blockMode: boolean): TaskStatus {
  return {
    task_id: taskId,
    known: entry !== undefined,
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
  return [
    `Task "${status.task_id}": ${status.attempts} attempt(s), ${status.failures} failure(s) in a row (${status.total_failures} in all).`,
    `Last: ${status.last_status} on ${status.last_model} at ${status.updated_at}.`,
    status.escalated
      ? `ESCALATED (${status.escalation_reason})${status.blocked ? '; further runs are BLOCKED until ollama_reset' : ''}.`
      : 'Not escalated.',
  ].join('\n');
}

export function ollamaTaskStatusTool(deps: {
  /** Opened on the first call (see App.services). */
  store: () => Promise<StateBackend>;
  blockMode: boolean;
  logControl: ControlLogger;
}): AnyToolDefinition {
  const unknown = (taskId: string): ToolOutcome<TaskStatus> => {
    const status = describeTask(taskId, undefined, deps.blockMode);
    return { structured: status, text: render(status), isError: true };
  };
  return {
    name: 'ollama_task_status',
    title: "A task's retry ledger",
    description:
      'Show what the server has recorded for a task_id: attempts, failures in a row (the next retry_count), last status and model, and whether it escalated (and is blocked). Runs nothing.',
    inputSchema: z.strictObject({ task_id: TASK_ID_FIELD }),
    outputSchema: taskStatusSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle({ task_id }: { task_id: string }) {
      let state: Awaited<ReturnType<StateBackend['snapshot']>>;
      try {
        state = await (await deps.store()).snapshot([task_id]);
      } catch (error) {
        const outcome = unknown(task_id);
        const why = `the retry ledger cannot be read (${(error as Error).message}); the task's record is unknown, not absent. Fix the telemetry dir (see ollama_health).`;
        return { ...outcome, text: `FAILED: ${why}` };
      }
      const status = describeTask(task_id, state.tasks[task_id], deps.blockMode);
      await deps.logControl({
        tool: 'ollama_task_status',
        task_id,
        model: null,
        action: 'status',
        detail: status.known ? `${status.failures} failure(s) in a row` : 'unknown task',
      });
      return { structured: status, text: render(status), isError: false };
    },
    async onInvalidInput(problem, raw) {
      const taskId =
        typeof (raw as { task_id?: unknown })?.task_id === 'string'
          ? String((raw as { task_id: string }).task_id).slice(0, 128)
          : '';
      const outcome = unknown(taskId);
      return { ...outcome, text: `REJECTED: ${problem}` };
    },
  };
}
