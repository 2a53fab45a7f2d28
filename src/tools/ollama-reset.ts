import * as z from 'zod';
import { canonicalModelName } from '../ollama/model-name.js';
import type { AnyToolDefinition, ControlLogger, ToolOutcome } from './tool-definition.js';
import { resetBreaker, viewCircuit } from '../policy/breaker.js';
import { CLOSED } from '../policy/breaker-state.js';
import type { ModelSettings } from '../config/model-tiers.js';
import type { StateBackend } from '../store/state-backend.js';
import { isStateStoreError } from '../store/state/state-store-error.js';
import { MODEL_FIELD, RESPONSE_FORMAT_FIELD, requestedFormat, TASK_ID_FIELD } from './shared-fields.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import { describeTask, taskStatusSchema } from './ollama-task-status.js';
import { circuitViewSchema } from '../app/reply/run-result.js';

/** The concise result is `done`, `cleared` and `message`; `detailed` adds what was there before. */
const resetResultSchema = z.object({
  done: z.boolean(),
  cleared: z.enum(['task', 'circuit']).nullable().optional(),
  message: z.string(),
  task_before: taskStatusSchema.nullable().optional().describe("the task's ledger before it was cleared"),
  circuit_before: circuitViewSchema
    .extend({ model: z.string() })
    .nullable()
    .optional()
    .describe("the model's circuit before it was closed"),
});

type ResetResult = z.infer<typeof resetResultSchema>;

function toResetReply(result: ResetResult, format: ResponseFormat): ResetResult {
  if (format === 'detailed') return result;
  return { done: result.done, ...(result.cleared ? { cleared: result.cleared } : {}), message: result.message };
}

const resetInputSchema = z
  .strictObject({
    task_id: TASK_ID_FIELD.optional().describe("Clear this task's record: no failures, no block."),
    model: MODEL_FIELD.optional().describe("Close this model's circuit."),
    response_format: RESPONSE_FORMAT_FIELD,
  })
  .refine((input) => (input.task_id === undefined) !== (input.model === undefined), {
    message: 'give exactly one of `task_id` or `model`',
  });

interface ResetDeps {
  /** Opened on the first call (see App.services). */
  store: () => Promise<StateBackend>;
  blockMode: boolean;
  settingsFor: (model: string) => ModelSettings;
  logControl: ControlLogger;
}

export function ollamaResetTool(deps: ResetDeps): AnyToolDefinition {
  const rejected = (message: string, format: ResponseFormat): ToolOutcome<ResetResult> => ({
    structured: toResetReply({ done: false, cleared: null, message, task_before: null, circuit_before: null }, format),
    text: `REJECTED: ${message}`,
    isError: true,
  });
  return {
    name: 'ollama_reset',
    title: 'Clear a task or close a circuit',
    description:
      "After a human fixed the cause: clear a task's record (task_id) or close a model's circuit (model); exactly one. Runs nothing.",
    inputSchema: resetInputSchema,
    outputSchema: resetResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handle(input: { task_id?: string; model?: string; response_format?: ResponseFormat }) {
      const format = input.response_format ?? 'concise';
      try {
        const result =
          input.task_id !== undefined ? await resetTask(deps, input.task_id) : await resetCircuit(deps, input.model!);
        return { structured: toResetReply(result, format), text: result.message, isError: false };
      } catch (error) {
        if (!isStateStoreError(error)) throw error;
        // Nothing was cleared: say so as a result, not as an internal error.
        const message = `Nothing was cleared: the retry ledger cannot be written (${error.message}). Fix the telemetry dir (see ollama_health) and call ollama_reset again.`;
        return { ...rejected(message, format), text: message };
      }
    },
    async onInvalidInput(problem, rawArguments) {
      return rejected(problem, requestedFormat(rawArguments));
    },
  };
}

/** Remove the task's ledger entry: its next attempt starts from retry_count 0, and a block is lifted. */
async function resetTask(deps: ResetDeps, taskId: string): Promise<ResetResult> {
  const store = await deps.store();
  const before = await store.transact([taskId], (state) => {
    const entry = state.tasks[taskId];
    delete state.tasks[taskId];
    return entry;
  });
  const message = before
    ? `Cleared task "${taskId}" (${before.failures} failure(s) in a row${before.escalated ? `, escalated: ${before.escalationReason}` : ''}). Its next attempt has retry_count 0.`
    : `Task "${taskId}" had no record; nothing to clear.`;
  await deps.logControl({ tool: 'ollama_reset', task_id: taskId, model: null, action: 'reset_task', detail: message });
  return {
    done: true,
    cleared: 'task',
    message,
    task_before: describeTask(taskId, before, deps.blockMode),
    circuit_before: null,
  };
}

/** Close the model's circuit, whatever its state, and say what it was. */
async function resetCircuit(deps: ResetDeps, model: string): Promise<ResetResult> {
  const key = canonicalModelName(model);
  const settings = deps.settingsFor(model);
  const store = await deps.store();
  const before = await store.transact([], (state) => {
    const previous = state.breakers[key] ?? CLOSED;
    state.breakers[key] = resetBreaker();
    return previous;
  });
  const view = viewCircuit(before, Date.now(), { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs });
  const message =
    before.state === 'closed'
      ? `The circuit of ${model} was already closed (${before.consecutiveFailures} failure(s) in a row, now 0).`
      : `Closed the circuit of ${model} (it was ${before.state} after ${before.consecutiveFailures} failure(s) in a row). Runs go through again.`;
  await deps.logControl({ tool: 'ollama_reset', task_id: null, model, action: 'reset_circuit', detail: message });
  return { done: true, cleared: 'circuit', message, task_before: null, circuit_before: { model, ...view } };
}
