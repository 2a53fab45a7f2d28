import * as z from 'zod';
import type { Config } from '../config/config.js';
import { REPLY_WITHIN_RANGE, SETTING_RANGES } from '../config/ranges.js';
import { jobHandlers, presentRunning, specMetadata, type JobScope, type Work, type WorkStart } from './job-reply.js';
import { parseGoDuration } from '../ollama/verbose-stats.js';
import type { AnyToolDefinition, ToolOutcome } from './tool-definition.js';
import type { RunResult } from '../app/reply/run-result.js';
import { runReplySchema, toRunReply, type ResponseFormat, type RunReply } from '../app/reply/run-reply.js';
import type { LiveCall } from '../app/call/live-call.js';
import type { RunService } from '../app/run-service.js';
import { formatElapsed } from './progress.js';
import { renderRunText } from './run-text.js';
import {
  FALLBACK_MODELS_FIELD,
  fallbackModelsProblems,
  jsonFitsWithin,
  MODEL_FIELD,
  RESPONSE_FORMAT_FIELD,
  requestedFormat,
  TASK_ID_FIELD,
  timeoutField,
  wholeNumber,
} from './shared-fields.js';
import type { QueueReason } from '../app/queue/queue-reason.js';
import type { RunRequest } from '../app/attempt/types.js';

/** A prompt larger than this is refused (it would not fit any local model's context anyway). */
export const MAX_PROMPT_CHARS = 1_000_000;
export const MAX_FORMAT_SCHEMA_CHARS = 32_768;

const ollamaRunFields = z.strictObject({
  model: MODEL_FIELD,
  fallback_models: FALLBACK_MODELS_FIELD.optional(),
  prompt: z
    .string()
    .max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`)
    .refine((value) => value.trim() !== '', 'must not be empty or only whitespace'),
  task_id: TASK_ID_FIELD.optional(),
  retry_count: wholeNumber({ min: 0, max: 1000 }).optional().describe('Failed attempts made before (only without task_id).'),
  max_retries: wholeNumber(SETTING_RANGES.max_retries).optional().describe('Failures allowed before escalation; 0 = no limit.'),
  timeout_ms: timeoutField().describe('Limit of the answer, from its first byte.'),
  start_timeout_ms: timeoutField(SETTING_RANGES.start_timeout_ms).describe(
    'Limit of the wait before the answer begins (model load).',
  ),
  format: z
    .union([z.literal('json'), z.record(z.string(), z.unknown())], {
      error: 'must be "json" or a JSON schema object',
    })
    .refine((value) => typeof value === 'string' || jsonFitsWithin(value, MAX_FORMAT_SCHEMA_CHARS), {
      message: `schema must be at most ${MAX_FORMAT_SCHEMA_CHARS} characters as JSON`,
    })
    .optional()
    .describe('"json" or a JSON schema for the answer.'),
  think: z
    .union([z.boolean(), z.enum(['high', 'medium', 'low'])], { error: 'must be true, false, "high", "medium" or "low"' })
    .optional()
    .describe('Thinking on/off or level, for models that think.'),
  keepalive: z
    .string()
    .max(32, 'must be at most 32 characters')
    // A duration as `--keepalive` takes it: what Go's time.ParseDuration reads.
    .refine(
      (text) => parseGoDuration(text) !== null,
      'must be a duration such as "5m", "1h30m" or ".5s" (units h, m, s, ms, us, µs, ns), "0" to unload the model at once, or negative ("-1m") to keep it loaded',
    )
    .optional()
    .describe('How long the model stays loaded after, e.g. "10m".'),
  include_thinking: z.boolean().optional(),
  allow_pull: z.boolean().optional().describe('Pull the model if it is missing (slow).'),
  deadline_ms: timeoutField().describe('Limit of the whole call, fallback models included.'),
  host: z.string().max(300, 'must be at most 300 characters').optional().describe('Pin an OLLAMA_MCP_HOSTS host.'),
});

function refineFallback(input: { model: string; fallback_models?: string[] | undefined }, ctx: z.RefinementCtx): void {
  for (const issue of fallbackModelsProblems(input.model, input.fallback_models)) {
    ctx.addIssue({ code: 'custom', path: ['fallback_models', issue.index], message: issue.message });
  }
}

/** One job of `ollama_run_many`: the arguments of `ollama_run` but its response_format. */
export const ollamaRunJobSchema = ollamaRunFields.superRefine(refineFallback);

/** Within how long a call answers; past it the work goes on as a job to collect with ollama_wait. */
export const REPLY_WITHIN_FIELD = wholeNumber(REPLY_WITHIN_RANGE)
  .optional()
  .describe('Reply by then; a longer run goes on as a job (0: at once).');

const ollamaRunInputSchema = ollamaRunFields
  .extend({
    response_format: RESPONSE_FORMAT_FIELD,
    reply_within_ms: REPLY_WITHIN_FIELD,
  })
  .superRefine(refineFallback);

type OllamaRunInput = z.output<typeof ollamaRunInputSchema>;

export function toRunRequest(input: z.output<typeof ollamaRunJobSchema>): RunRequest {
  return {
    model: input.model,
    prompt: input.prompt,
    taskId: input.task_id,
    retryCount: input.retry_count,
    maxRetries: input.max_retries,
    timeoutMs: input.timeout_ms,
    startTimeoutMs: input.start_timeout_ms,
    format: input.format,
    think: input.think,
    keepalive: input.keepalive,
    includeThinking: input.include_thinking,
    allowPull: input.allow_pull,
    fallbackModels: input.fallback_models,
    deadlineMs: input.deadline_ms,
    host: input.host,
  };
}

/** `service`: the run service, built on the first call (see App.services). */
export function ollamaRunTool(service: () => Promise<RunService>, config: Config, scope: JobScope): AnyToolDefinition {
  return {
    name: 'ollama_run',
    title: 'Run a local Ollama model',
    description: [
      'Run one self-contained task on a local Ollama model.',
      'Read `escalate` on every result: true means STOP, do not run this task again; hand it to a human or a stronger model.',
      'Otherwise do what `next` says. Pass the same task_id on every retry.',
      `Default limits (ms): timeout_ms ${config.timeoutMs}, start_timeout_ms ${config.startTimeoutMs}.`,
    ].join(' '),
    inputSchema: ollamaRunInputSchema,
    outputSchema: runReplySchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    ...jobHandlers(service, config, scope, startRun, present),
    async onInvalidInput(problem, rawArguments) {
      return present(await (await service()).rejectInvalid(rawArguments, problem), requestedFormat(rawArguments));
    },
  };
}

/** One run under way, which may go on as a job. */
function startRun(runs: RunService, input: OllamaRunInput, how: WorkStart): Work<RunResult, RunReply> {
  const startedAt = performance.now();
  const startedAtMs = Date.now();
  const call = runs.start(toRunRequest(input), { signal: how.signal, meta: how.meta }, how.id);
  const { live } = call;
  const elapsed = () => performance.now() - startedAt;
  const now = () => describeLiveRun(live.model ?? input.model, live, elapsed());
  return {
    result: call.result,
    progress: () => ({ progress: elapsed() / 1000, message: now() }),
    handOver: async (owner, cancel) => {
      const job = { id: call.id, kind: 'run' as const, owner, tasks: [input.task_id ?? null], model: input.model };
      await runs.jobs.adopt({ ...job, startedAt: startedAtMs, result: call.result, live, cancel });
    },
    running: (_format, budgetMs) => presentRunning(call.id, now(), budgetMs, elapsed()),
  };
}

/** A heartbeat message: model, where the run is, elapsed time, output so far, why it waits. */
export function describeLiveRun(model: string, live: LiveCall, elapsedMs: number): string {
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
      const why = busy?.status === 'spawn_failed' ? 'the machine could not start the CLI' : 'Ollama is busy';
      return `${model}: ${why}; waiting to retry (retry ${busy?.retry ?? '?'} of ${busy?.of ?? '?'})${wait}, ${elapsed} elapsed`;
    }
    case 'next_model':
      return `${model}: trying the next model of the fallback chain, ${elapsed} elapsed`;
    case 'starting': {
      const waiting = live.startingSince === null ? elapsed : formatElapsed(performance.now() - live.startingSince);
      const what = live.cold ? `waiting for ${model} to load` : 'waiting for Ollama to begin the answer (reading the prompt)';
      return `${model}${onHost(live)}: ${what} for ${waiting} (not counted in timeout_ms), ${elapsed} elapsed`;
    }
    case 'running': {
      const running = live.runningSince === null ? elapsed : formatElapsed(performance.now() - live.runningSince);
      return `${model}${onHost(live)}: running for ${running}, ${live.outputBytes} bytes of output so far`;
    }
    default:
      return `${model}: ${live.phase}, ${elapsed} elapsed`;
  }
}

/** ` on gpu-box:11434` when the server sends to several Ollama hosts, else nothing. */
const onHost = (live: LiveCall): string => (live.host === null ? '' : ` on ${live.host}`);

const calls = (n: number) => `${n} call${n === 1 ? '' : 's'}`;

/** Why a call waits in the queue, in words: first the other sessions' calls it waits behind, if any. */
function describeQueueReason(model: string, reason: QueueReason): string {
  const why = describeWaitReason(model, reason);
  const elsewhere = reason.elsewhere;
  if (!elsewhere) return why;
  return `queued behind ${calls(elsewhere.calls)} of ${elsewhere.model} from another session; ${why.replace(/^queued: /, '')}`;
}

function describeWaitReason(model: string, reason: QueueReason): string {
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

export function present(result: RunResult, format: ResponseFormat): ToolOutcome<RunReply> {
  return {
    structured: toRunReply(result, format),
    text: renderRunText(result, format),
    isError: !result.metadata.ok,
    fields: { metadata: specMetadata(result) },
  };
}
