import * as z from 'zod';
import type { Config } from '../config/config.js';
import { SETTING_RANGES } from '../config/ranges.js';
import { jsonFitsWithin, MODEL_FIELD, TASK_ID_FIELD, timeoutField } from './shared-fields.js';
import { FALLBACK_MODELS_FIELD, fallbackModelsProblems } from './shared-fields.js';
import type { AnyToolDefinition, ToolOutcome } from '../mcp/tool-registry.js';
import { runResultSchema, type RunResult } from '../app/run-result.js';
import { ESCALATION_REASONS } from '../policy/run-status.js';
import { LiveRun } from '../app/run-progress.js';
import type { QueueReason } from '../app/call-slots.js';
import type { RunRequest, RunService } from '../app/run-service.js';
import { formatElapsed, startHeartbeat } from '../mcp/progress.js';
import { usageLine } from './usage-line.js';

/** A prompt larger than this is refused (it would not fit any local model's context anyway). */
export const MAX_PROMPT_CHARS = 1_000_000;
export const MAX_FORMAT_SCHEMA_CHARS = 32_768;
/** Go duration as `--keepalive` takes it: a number and a unit, possibly several (`1h30m`); `-1m` keeps it loaded. */
const MAX_RETRIES = SETTING_RANGES.max_retries;

const GO_DURATION = /^-?(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;

const ollamaRunFields = z.strictObject({
  model: MODEL_FIELD,
  fallback_models: FALLBACK_MODELS_FIELD.optional(),
  prompt: z
    .string()
    .max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`)
    .refine((value) => value.trim() !== '', 'must not be empty or only whitespace')
    .describe('The full task for the model. Sent on stdin, never on the command line.'),
  task_id: TASK_ID_FIELD.optional(),
  retry_count: z
    .number()
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(1000, 'must be at most 1000')
    .optional()
    .describe('Failed attempts you already made. Optional with task_id (the server counts); needed for escalation without one.'),
  max_retries: z
    .number()
    .int('must be a whole number')
    .min(MAX_RETRIES.min, `must be ${MAX_RETRIES.min} or more`)
    .max(MAX_RETRIES.max, `must be at most ${MAX_RETRIES.max}`)
    .optional()
    .describe(
      'Failed attempts allowed before escalation (server default if omitted; 0 = no limit). With 3, the 4th failure escalates.',
    ),
  timeout_ms: timeoutField().describe(
    "Limit of the model's answer in ms, counted from its first byte (server default if omitted); the model process is killed when it passes.",
  ),
  start_timeout_ms: timeoutField(SETTING_RANGES.start_timeout_ms).describe(
    'Limit in ms of the wait before the answer begins (Ollama queueing the request, loading the model, reading the prompt); server default 5 minutes.',
  ),
  format: z
    .union([z.literal('json'), z.record(z.string(), z.unknown())], {
      error: 'must be "json" or a JSON schema object',
    })
    .refine((value) => typeof value === 'string' || jsonFitsWithin(value, MAX_FORMAT_SCHEMA_CHARS), {
      message: `schema must be at most ${MAX_FORMAT_SCHEMA_CHARS} characters as JSON`,
    })
    .optional()
    .describe('Constrain the answer: "json", or a JSON schema object (passed to `ollama run --format`).'),
  think: z
    .union([z.boolean(), z.enum(['high', 'medium', 'low'])], { error: 'must be true, false, "high", "medium" or "low"' })
    .optional()
    .describe('Thinking for models that support it (Ollama 0.9+): false turns it off. Thinking text is never mixed into output.'),
  keepalive: z
    .string()
    .max(32, 'must be at most 32 characters')
    .regex(GO_DURATION, 'must be a duration with a unit, such as "5m", "30s" or "1h30m"')
    .optional()
    .describe('How long Ollama keeps the model loaded afterwards, e.g. "10m".'),
  include_thinking: z.boolean().optional().describe('Return the thinking text in `thinking` (default false).'),
  allow_pull: z
    .boolean()
    .optional()
    .describe(
      'Let a model that is not installed be pulled by this run (it can take many minutes). By default a missing model fails at once.',
    ),
  deadline_ms: timeoutField().describe(
    'Limit for the whole call: every model of the fallback chain and the waits between busy retries. Each model still gets at most timeout_ms.',
  ),
});

export const ollamaRunInputSchema = ollamaRunFields.superRefine((input, ctx) => {
  for (const issue of fallbackModelsProblems(input.model, input.fallback_models)) {
    ctx.addIssue({ code: 'custom', path: ['fallback_models', issue.index], message: issue.message });
  }
});

export type OllamaRunInput = z.output<typeof ollamaRunInputSchema>;

export function toRunRequest(input: OllamaRunInput): RunRequest {
  return {
    model: input.model,
    prompt: input.prompt,
    ...(input.task_id !== undefined ? { taskId: input.task_id } : {}),
    ...(input.retry_count !== undefined ? { retryCount: input.retry_count } : {}),
    ...(input.max_retries !== undefined ? { maxRetries: input.max_retries } : {}),
    ...(input.timeout_ms !== undefined ? { timeoutMs: input.timeout_ms } : {}),
    ...(input.start_timeout_ms !== undefined ? { startTimeoutMs: input.start_timeout_ms } : {}),
    ...(input.format !== undefined ? { format: input.format } : {}),
    ...(input.think !== undefined ? { think: input.think } : {}),
    ...(input.keepalive !== undefined ? { keepalive: input.keepalive } : {}),
    ...(input.include_thinking !== undefined ? { includeThinking: input.include_thinking } : {}),
    ...(input.allow_pull !== undefined ? { allowPull: input.allow_pull } : {}),
    ...(input.fallback_models !== undefined ? { fallbackModels: input.fallback_models } : {}),
    ...(input.deadline_ms !== undefined ? { deadlineMs: input.deadline_ms } : {}),
  };
}

/** `service`: the run service, built on the first call (see App.services). */
export function ollamaRunTool(service: () => Promise<RunService>, config: Config): AnyToolDefinition {
  return {
    name: 'ollama_run',
    title: 'Run a local Ollama model',
    description: [
      'Hand one self-contained task to a local Ollama model and get its answer.',
      `Calls wait in this server's queue until Ollama can run them (loaded models first); the answer is killed after timeout_ms from its first byte (default ${config.timeoutMs} ms), the wait for it after start_timeout_ms (default ${config.startTimeoutMs} ms).`,
      'Always pass the same task_id for retries of the same work. Read metadata.escalate on every result:',
      'when it is true, STOP calling ollama_run for that task and hand it upwards (to a human or a stronger model);',
      `escalation_reason says why (${ESCALATION_REASONS.join(', ')}).`,
      'When metadata.circuit.retry_after_seconds is set, the model refuses runs until then.',
      'fallback_models: models tried in order when the one before cannot serve (circuit open, not installed, crashed...); metadata.model is the one that answered, metadata.fallback the ones tried before.',
    ].join(' '),
    inputSchema: ollamaRunInputSchema,
    outputSchema: runResultSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handle(input: OllamaRunInput, extra) {
      const live = new LiveRun();
      const startedAt = performance.now();
      const stop = startHeartbeat(extra, config.progressIntervalMs, () => ({
        progress: (performance.now() - startedAt) / 1000,
        message: describeLiveRun(live.model ?? input.model, live, performance.now() - startedAt),
      }));
      try {
        return present(await (await service()).run(toRunRequest(input), { signal: extra.signal, ...live.listeners }));
      } finally {
        stop();
      }
    },
    async onInvalidInput(problem, rawArguments) {
      return present(await (await service()).rejectInvalid(rawArguments, problem));
    },
  };
}

/** A heartbeat message: model, where the run is, elapsed time, output so far, why it waits. */
export function describeLiveRun(model: string, live: LiveRun, elapsedMs: number): string {
  const elapsed = formatElapsed(elapsedMs);
  switch (live.phase) {
    case 'queued': {
      const reason = live.queueReason();
      return `${model}: ${reason === null ? 'queued' : describeQueueReason(model, reason)}, ${elapsed} elapsed`;
    }
    case 'waiting_for_probe':
      return `${model}: waiting for the model's probe run (its circuit is half-open), ${elapsed} elapsed`;
    case 'busy_backoff': {
      const busy = live.busy;
      const wait = busy === null ? '' : ` in ${Math.max(0, Math.ceil((busy.until - performance.now()) / 1000))} s`;
      return `${model}: Ollama is busy; waiting to retry (retry ${busy?.retry ?? '?'} of ${busy?.of ?? '?'})${wait}, ${elapsed} elapsed`;
    }
    case 'next_model':
      return `${model}: trying the next model of the fallback chain, ${elapsed} elapsed`;
    case 'starting': {
      const waiting = live.startingSince === null ? elapsed : formatElapsed(performance.now() - live.startingSince);
      const what = live.cold ? `waiting for ${model} to load` : 'waiting for Ollama to begin the answer (reading the prompt)';
      return `${model}: ${what} for ${waiting} (not counted in timeout_ms), ${elapsed} elapsed`;
    }
    case 'running': {
      const running = live.runningSince === null ? elapsed : formatElapsed(performance.now() - live.runningSince);
      return `${model}: running for ${running}, ${live.outputBytes} bytes of output so far`;
    }
    default:
      return `${model}: ${live.phase}, ${elapsed} elapsed`;
  }
}

/** Why a call waits in this server's queue, in words. */
export function describeQueueReason(model: string, reason: QueueReason): string {
  const calls = (n: number) => `${n} call${n === 1 ? '' : 's'}`;
  switch (reason.kind) {
    case 'concurrency':
      return `queued: this server runs as many calls as it may at once (OLLAMA_MCP_CONCURRENCY), ${calls(reason.ahead)} ahead`;
    case 'parallel':
      return `queued behind ${calls(reason.running + reason.ahead)} for ${model} (Ollama runs ${reason.running} of them at once)`;
    case 'batch':
      return 'queued: its batch runs as many jobs at once as its concurrency allows';
    case 'load': {
      const busy = reason.loaded.length > 0 ? reason.loaded.join(', ') : 'the loaded models';
      const when = reason.switchInMs > 0 ? `; the server switches in ${Math.ceil(reason.switchInMs / 1000)} s at the latest` : '';
      return `queued: waiting for ${busy} to finish, so Ollama can load ${model} in its place${when}`;
    }
    case 'unloading':
      return `queued: ${model} finishes its running calls and gives way to ${reason.for}, which waited longer`;
    case 'shared_cap':
      return `queued for a slot shared by every server process (OLLAMA_MCP_SHARED_CONCURRENCY), ${calls(reason.ahead)} ahead`;
  }
}

function present(result: RunResult): ToolOutcome<RunResult> {
  return { structured: result, text: renderRunResult(result), isError: !result.metadata.ok };
}

/**
 * The text a client (and the model reading it) sees. Many clients show only this, so it carries
 * the answer, a one-line verdict and, when escalating, an instruction that cannot be missed.
 */
export function renderRunResult({ output, metadata: m }: RunResult): string {
  const parts: string[] = [];
  if (m.escalate) {
    parts.push(
      [
        `ESCALATE: STOP RETRYING${m.task_id ? ` TASK "${m.task_id}"` : ''}. Reason: ${m.escalation_reason}.`,
        escalationAdvice(m.escalation_reason, m.retry_count, m.max_retries, m.circuit.retry_after_seconds),
        'Hand this task upwards (to a human or a stronger model) instead of calling ollama_run for it again.',
      ].join('\n'),
    );
  }
  if (output !== '') parts.push(output);
  const task = m.task_id ? `task ${m.task_id}, ` : '';
  const fellBack =
    m.fallback.length === 0 ? '' : ` after ${m.fallback.map((f) => `${f.model} (${f.status})`).join(', ')} could not serve it`;
  const busy = m.busy_retries === 0 ? '' : `, ${m.busy_retries} busy ${m.busy_retries === 1 ? 'retry' : 'retries'}`;
  const verdict = m.ok
    ? `ok: ${m.model} answered in ${m.duration_ms} ms${fellBack} (${task}retry_count ${m.retry_count}${busy}).`
    : `FAILED (${m.status}): ${m.error?.message ?? 'no detail'} [${task}model ${m.model}, retry_count ${m.retry_count}, max_retries ${m.max_retries}${
        m.retries_left !== null && !m.escalate ? `, retries left ${m.retries_left}` : ''
      }${m.circuit.retry_after_seconds !== null ? `, retry after ${m.circuit.retry_after_seconds} s` : ''}]`;
  parts.push(m.status === 'invalid_input' ? `REJECTED (invalid_input), nothing was run. ${m.error?.message ?? ''}` : verdict);
  const tokens = usageLine(m.usage);
  if (tokens !== null) parts.push(tokens);
  // The counting behind retry_count/escalate may lag: the agent must see it next to the verdict.
  for (const warning of m.warnings) parts.push(`WARNING (${warning.kind}): ${warning.message}`);
  parts.push(`metadata: ${JSON.stringify(m)}`);
  return parts.join('\n\n');
}

function escalationAdvice(reason: string | null, retryCount: number, maxRetries: number, retryAfter: number | null): string {
  switch (reason) {
    case 'max_retries_exceeded':
      return `The task has now failed ${retryCount + 1} times (max_retries ${maxRetries}).`;
    case 'circuit_open':
      return `The model has failed too many times in a row and refuses runs${retryAfter !== null ? ` for ${retryAfter} s` : ''}; other tasks on it will be refused too.`;
    case 'model_not_found':
      return 'The model is not installed on this machine; someone has to pull it (or pick an installed model).';
    case 'ollama_unreachable':
      return 'The Ollama server is not running or not reachable; someone has to start it (`ollama serve`).';
    case 'signin_required':
      return 'This cloud model needs `ollama signin` on the server machine.';
    case 'cloud_access_denied':
      return 'The ollama.com account may not run this cloud model (a subscription is needed), or cloud models are disabled on the server; a human has to change that, or pick a local model.';
    case 'cli_not_found':
      return 'The ollama CLI is missing on the server machine (or OLLAMA_BIN is wrong).';
    default:
      return '';
  }
}
