import type { ModelSettings } from '../config/model-tiers.js';
import { canonicalModelName } from '../ollama/model-name.js';
import { decideBusyRetry } from '../policy/busy-backoff.js';
import { fallsThrough } from '../policy/fallback.js';
import type { EscalationReason, RunStatus } from '../policy/run-status.js';
import type { RunContext, RunRequest } from './run-request.js';
import type { FallbackEntry, RunResult } from './run-result.js';

export const BUSY_WAIT_CANCELLED =
  'cancelled while waiting to retry after Ollama answered "server busy" or "usage limit", or the CLI could not be started';

/** A model of the chain that could not serve the call, as the final result and its error tell it. */
export interface TriedModel extends FallbackEntry {
  /** Its error text, null when it had none. */
  readonly error: string | null;
  /** Its own escalation (policy/task-verdict.ts), which the call's verdict weighs with the models after it. */
  readonly own: EscalationReason | null;
}

/** What a call does after an attempt: end with it, retry the model after a busy wait, or try the next model. */
export type Next = { readonly kind: 'stop' } | { readonly kind: 'busy'; readonly waitMs: number } | { readonly kind: 'fallback' };

export const STOP: Next = { kind: 'stop' };

/** An attempt's result, and what its call does next (decided once, when its verdict was recorded). */
export interface AttemptResult {
  readonly result: RunResult;
  readonly next: Next;
  /** Its own escalation: its status needs a human, it opened its model's circuit, or its circuit refused it. */
  readonly own: EscalationReason | null;
}

/** Where one attempt stands in its call: what its runs.jsonl line and its result's metadata say of the call. */
export interface CallStep {
  /** Shared by every model's attempt of a call with a fallback chain; null without a chain. */
  readonly chainId: string | null;
  /** 0 for the chain's first model, 1 for the next...; null without a chain. */
  readonly chainStep: number | null;
  /** 0 for a model's first attempt in the call, n for its n-th retry after `server_busy`. */
  readonly busyTry: number;
  /** This attempt's limit of the answer, from its first byte. */
  readonly timeoutMs: number;
  /** This attempt's limit of the wait for its first byte (a busy retry gets what is left of its model's). */
  readonly startTimeoutMs: number;
  /** The call's max_retries (the first model's, or the caller's), for every model of the chain. */
  readonly maxRetries: number;
  /** Models tried before this one, in order. */
  readonly tried: readonly TriedModel[];
  /** Busy retries done so far in the call. */
  readonly busyRetries: number;
  /**
   * What the call does if this attempt ends with `status`. The attempt asks once for the status it
   * ends with, before its verdict is recorded (a call that goes on records nothing for the task),
   * and hands the answer back with its result. Trying the next model is decided only when a later
   * model of the chain can take a run: else the call ends here, with this model's verdict.
   */
  readonly after: (status: RunStatus) => Promise<Next>;
}

export interface CallRunnerDeps {
  /** One attempt of one model: admission, spawn, verdict, log line, result. */
  readonly attempt: (request: RunRequest, context: RunContext, step: CallStep) => Promise<AttemptResult>;
  /** A call cancelled while it waited to retry a busy server: its last line and result. */
  readonly cancelledWaiting: (request: RunRequest, context: RunContext, step: CallStep) => Promise<RunResult>;
  /** Does the model's circuit refuse runs now (open, its cooldown not over)? */
  readonly refuses: (model: string) => Promise<boolean>;
  readonly settingsFor: (model: string) => ModelSettings;
  /** OLLAMA_MCP_BUSY_RETRIES. */
  readonly busyRetries: number;
  /** Epoch ms. */
  readonly clock: () => number;
  /** [0, 1), for the backoff's jitter. */
  readonly random: () => number;
  /** Resolves true after `ms`, or false as soon as `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal | undefined) => Promise<boolean>;
  readonly newId: () => string;
}

/** The chain: the models a call may attempt, in order: its own, then its `fallback_models` (or its tier rule's), itself left out. */
export function chainOf(request: RunRequest, tierFallback: readonly string[]): readonly string[] {
  const fallback = request.fallbackModels ?? tierFallback;
  if (fallback.length === 0) return [request.model];
  const seen = new Set([canonicalModelName(request.model)]);
  const models = [request.model];
  for (const model of fallback) {
    const key = canonicalModelName(model);
    if (!seen.has(key)) models.push(model);
    seen.add(key);
  }
  return models;
}

/** What a call is made of: its models in order, its chain id, its limits, its context with the call's deadline. */
interface CallPlan {
  readonly models: readonly string[];
  readonly chainId: string | null;
  readonly maxRetries: number;
  /** Epoch ms by which the whole call ends (deadline_ms, or a batch's); undefined: none. */
  readonly deadlineAt: number | undefined;
  readonly context: RunContext;
}

/** What the call has gathered so far: the models that could not serve it, the busy retries made. */
interface CallSoFar {
  readonly tried: TriedModel[];
  busyRetries: number;
}

/**
 * One `ollama_run` call (or one `ollama_run_many` job): its model, then the models of its fallback
 * chain while the one before cannot serve, each retried after a jittered backoff while Ollama
 * answers `server busy`. Every attempt has its own runs.jsonl line; the caller gets the last one.
 * Bounds: for each model, `start_timeout_ms` until its answer begins (its busy waits and retries
 * included, counted from its first attempt) and `timeout_ms` for the answer; `deadline_ms` (and a batch
 * deadline) for the whole call.
 */
export async function runCall(deps: CallRunnerDeps, request: RunRequest, context: RunContext): Promise<RunResult> {
  const plan = callPlan(deps, request, context);
  const soFar: CallSoFar = { tried: [], busyRetries: 0 };
  for (let index = 0; ; index += 1) {
    const result = await tryModel(deps, request, plan, index, soFar);
    if (result !== null) return result;
    context.onPhase?.({ phase: 'next_model', model: plan.models[index + 1]! });
  }
}

function callPlan(deps: CallRunnerDeps, request: RunRequest, context: RunContext): CallPlan {
  const primary = deps.settingsFor(request.model);
  const models = chainOf(request, primary.fallback);
  const own = request.deadlineMs === undefined ? undefined : deps.clock() + request.deadlineMs;
  const deadlineAt =
    own === undefined || context.deadlineAt === undefined ? (own ?? context.deadlineAt) : Math.min(own, context.deadlineAt);
  return {
    models,
    chainId: models.length > 1 ? deps.newId() : null,
    maxRetries: request.maxRetries ?? primary.maxRetries,
    deadlineAt,
    context: deadlineAt === context.deadlineAt ? context : { ...context, deadlineAt },
  };
}

/**
 * The attempts of one model of the chain, its busy retries included: the call's result, or null
 * when the call moves on to the next model.
 */
async function tryModel(
  deps: CallRunnerDeps,
  request: RunRequest,
  plan: CallPlan,
  index: number,
  soFar: CallSoFar,
): Promise<RunResult | null> {
  const { models, deadlineAt } = plan;
  const model = models[index]!;
  const stepRequest = index === 0 ? request : { ...request, model };
  const settings = deps.settingsFor(model);
  const timeoutMs = request.timeoutMs ?? settings.timeoutMs;
  const startTimeoutMs = request.startTimeoutMs ?? settings.startTimeoutMs;
  // Busy retries and their waits happen before any answer: they spend the model's start allowance.
  const budgetEndsAt = Math.min(deps.clock() + startTimeoutMs, deadlineAt ?? Infinity);
  for (let busyTry = 0; ; busyTry += 1) {
    const after = nextDecider(deps, plan, index, busyTry, budgetEndsAt);
    const left = budgetEndsAt - deps.clock();
    const step: CallStep = {
      chainId: plan.chainId,
      chainStep: plan.chainId === null ? null : index,
      busyTry,
      timeoutMs,
      startTimeoutMs: busyTry === 0 ? startTimeoutMs : Math.max(1, Math.min(startTimeoutMs, left)),
      maxRetries: plan.maxRetries,
      tried: [...soFar.tried],
      busyRetries: soFar.busyRetries,
      after,
    };
    const { result, next, own } = await deps.attempt(stepRequest, plan.context, step);
    if (next.kind === 'stop') return result;
    if (next.kind === 'fallback') {
      const { status, run_id: runId, error } = result.metadata;
      soFar.tried.push({ model, status, run_id: runId, error: error?.message ?? null, own });
      return null;
    }
    soFar.busyRetries += 1;
    const { status } = result.metadata;
    plan.context.onPhase?.({ phase: 'busy_backoff', retry: busyTry + 1, of: deps.busyRetries, waitMs: next.waitMs, status });
    if (!(await deps.sleep(next.waitMs, plan.context.signal))) {
      const stopped: CallStep = {
        ...step,
        busyTry: busyTry + 1,
        tried: [...soFar.tried],
        busyRetries: soFar.busyRetries,
        after: async () => STOP,
      };
      return deps.cancelledWaiting(stepRequest, plan.context, stopped);
    }
  }
}

/** What the call does after an attempt of `plan.models[index]` (its `busyTry`) ends with a status. */
function nextDecider(
  deps: CallRunnerDeps,
  plan: CallPlan,
  index: number,
  busyTry: number,
  budgetEndsAt: number,
): (status: RunStatus) => Promise<Next> {
  return async (status) => {
    const now = deps.clock();
    const busy = decideBusyRetry({
      status,
      retriesDone: busyTry,
      maxRetries: deps.busyRetries,
      now,
      budgetEndsAt,
      random: deps.random,
    });
    if (busy.retry) return { kind: 'busy', waitMs: busy.waitMs };
    const later = plan.models.slice(index + 1);
    if (!fallsThrough({ status, hasNext: later.length > 0, now, deadlineAt: plan.deadlineAt ?? null })) return STOP;
    // No later model takes runs now: the call ends with this model's verdict, not with a refusal.
    for (const model of later) if (!(await deps.refuses(model))) return { kind: 'fallback' };
    return STOP;
  };
}
