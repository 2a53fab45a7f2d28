import * as z from 'zod';
import { canonicalModelName } from '../ollama/model-name.js';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';
import { resetBreaker, viewCircuit } from '../policy/breaker.js';
import { CLOSED } from '../policy/breaker-state.js';
import type { ModelSettings } from '../app/run-service.js';
import type { StateBackend } from '../store/state-backend.js';
import { isStateStoreError } from '../store/state-store-error.js';
import type { ControlLogger } from './control-log.js';
import { MODEL_FIELD, TASK_ID_FIELD } from './shared-fields.js';
import { describeTask, taskStatusSchema } from './ollama-task-status.js';
import { circuitViewSchema } from '../app/run-result.js';

export const resetResultSchema = z.object({
  done: z.boolean(),
  cleared: z.enum(['task', 'circuit']).nullable(),
  message: z.string(),
  task_before: taskStatusSchema.nullable().describe("the task's ledger before it was cleared"),
  circuit_before: circuitViewSchema.extend({ model: z.string() }).nullable().describe("the model's circuit before it was closed"),
});

type ResetResult = z.infer<typeof resetResultSchema>;

const resetInputSchema = z
  .strictObject({
    task_id: TASK_ID_FIELD.optional().describe(
      "Clear this task's ledger: its failure count starts again at 0 (and a block is lifted).",
    ),
    model: MODEL_FIELD.optional().describe("Close this model's circuit (after a human fixed the cause)."),
  })
  .refine((input) => (input.task_id === undefined) !== (input.model === undefined), {
    message: 'give exactly one of `task_id` or `model`',
  });

export function ollamaResetTool(deps: {
  /** Opened on the first call (see App.services). */
  store: () => Promise<StateBackend>;
  blockMode: boolean;
  settingsFor: (model: string) => ModelSettings;
  clock?: () => number;
  logControl: ControlLogger;
}): AnyToolDefinition {
  const clock = deps.clock ?? Date.now;
  const rejected = (message: string): ToolOutcome<ResetResult> => ({
    structured: { done: false, cleared: null, message, task_before: null, circuit_before: null },
    text: `REJECTED: ${message}`,
    isError: true,
  });
  return {
    name: 'ollama_reset',
    title: 'Clear a task or close a circuit',
    description:
      "After a human fixed the cause: clear one task's retry ledger (give task_id), or close one model's circuit (give model). Exactly one of the two. Runs nothing; logged in runs.jsonl.",
    inputSchema: resetInputSchema,
    outputSchema: resetResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handle(input: { task_id?: string; model?: string }) {
      try {
        return await reset(input);
      } catch (error) {
        if (!isStateStoreError(error)) throw error;
        // Nothing was cleared: say so as a result, not as an internal error.
        const message = `Nothing was cleared: the retry ledger cannot be written (${error.message}). Fix the telemetry dir (see ollama_health) and call ollama_reset again.`;
        return {
          structured: { done: false, cleared: null, message, task_before: null, circuit_before: null },
          text: message,
          isError: true,
        };
      }
    },
    async onInvalidInput(problem) {
      return rejected(problem);
    },
  };

  async function reset(input: { task_id?: string; model?: string }): Promise<ToolOutcome<ResetResult>> {
    if (input.task_id !== undefined) {
      const taskId = input.task_id;
      const before = await (
        await deps.store()
      ).transact([taskId], (state) => {
        const entry = state.tasks[taskId];
        delete state.tasks[taskId];
        return entry;
      });
      const message = before
        ? `Cleared task "${taskId}" (${before.failures} failure(s) in a row${before.escalated ? `, escalated: ${before.escalationReason}` : ''}). Its next attempt has retry_count 0.`
        : `Task "${taskId}" had no record; nothing to clear.`;
      await deps.logControl({ tool: 'ollama_reset', task_id: taskId, model: null, action: 'reset_task', detail: message });
      const structured: ResetResult = {
        done: true,
        cleared: 'task',
        message,
        task_before: describeTask(taskId, before, deps.blockMode),
        circuit_before: null,
      };
      return { structured, text: message, isError: false };
    }
    const model = input.model!;
    const key = canonicalModelName(model);
    const settings = deps.settingsFor(model);
    const before = await (
      await deps.store()
    ).transact([], (state) => {
      const previous = state.breakers[key] ?? CLOSED;
      state.breakers[key] = resetBreaker();
      return previous;
    });
    const view = viewCircuit(before, clock(), { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs });
    const message =
      before.state === 'closed'
        ? `The circuit of ${model} was already closed (${before.consecutiveFailures} failure(s) in a row, now 0).`
        : `Closed the circuit of ${model} (it was ${before.state} after ${before.consecutiveFailures} failure(s) in a row). Runs go through again.`;
    await deps.logControl({ tool: 'ollama_reset', task_id: null, model, action: 'reset_circuit', detail: message });
    return {
      structured: { done: true, cleared: 'circuit', message, task_before: null, circuit_before: { model, ...view } },
      text: message,
      isError: false,
    };
  }
}
