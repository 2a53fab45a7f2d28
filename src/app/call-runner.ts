import type { ModelSettings } from '../config/model-tiers.js';
import { canonicalModelName } from '../ollama/model-name.js';
import { decideBusyRetry } from '../policy/busy-backoff.js';
import { fallsThrough } from '../policy/fallback.js';
import type { RunStatus } from '../policy/run-status.js';
import type { RunContext, RunRequest } from './run-request.js';
import type { FallbackEntry, RunResult } from './run-result.js';

export const BUSY_WAIT_CANCELLED = 'cancelled while waiting to retry after Ollama answered "server busy" or "usage limit"';

/** A model of the chain that could not serve the call, as the final result and its error tell it. */
export interface TriedModel extends FallbackEntry {
  /** Its error text, null when it had none. */
  readonly error: string | null;
}

/** Where one try stands in its call: what its runs.jsonl line and its result's metadata say of the call. */
export interface CallStep {
  /** Shared by every model's attempt of a call with a fallback chain; null without a chain. */
  readonly chainId: string | null;
  /** 0 for the chain's first model, 1 for the next...; null without a chain. */
  readonly chainStep: number | null;
  /** 0 for a model's first try in the call, n for its n-th retry after `server_busy`. */
  readonly busyTry: number;
  /** This try's limit of the answer, from its first byte. */
  readonly timeoutMs: number;
  /** This try's limit of the wait for its first byte (a busy retry gets what is left of its model's). */
  readonly startTimeoutMs: number;
  /** The call's max_retries (the first model's, or the caller's), for every model of the chain. */
  readonly maxRetries: number;
  /** Models tried before this one, in order. */
  readonly tried: readonly TriedModel[];
  /** Busy retries done so far in the call. */
  readonly busyRetries: number;
  /**
   * Does the server go on after this try ends with `status` (a busy retry, or the next model)?
   * Decided once, at the first question, and the same answer after: the ledger asks before it
   * records the verdict, the log line says it as `will_retry`.
   */
  readonly goesOn: (status: RunStatus) => boolean;
}

export interface CallRunnerDeps {
  /** One try of one model: admission, spawn, verdict, log line, result. */
  readonly attempt: (request: RunRequest, context: RunContext, step: CallStep) => Promise<RunResult>;
  /** A call cancelled while it waited to retry a busy server: its last line and result. */
  readonly cancelledWaiting: (request: RunRequest, context: RunContext, step: CallStep) => Promise<RunResult>;
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

/** The models a call tries, in order: its own, then its `fallback_models` (or its tier rule's), itself left out. */
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

type Next = { readonly kind: 'stop' } | { readonly kind: 'busy'; readonly waitMs: number } | { readonly kind: 'fallback' };

/**
 * One `ollama_run` call (or one `ollama_run_many` job): its model, then the models of its fallback
 * chain while the one before cannot serve, each retried after a jittered backoff while Ollama
 * answers `server busy`. Every try is its own attempt with its own runs.jsonl line; the caller gets
 * the last one. Bounds: for each model, `start_timeout_ms` until its answer begins (its busy waits and
 * retries included, counted from its first try) and `timeout_ms` for the answer; `deadline_ms` (and a
 * batch deadline) for the whole call.
 */
export async function runCall(deps: CallRunnerDeps, request: RunRequest, context: RunContext): Promise<RunResult> {
  const primary = deps.settingsFor(request.model);
  const models = chainOf(request, primary.fallback);
  const chainId = models.length > 1 ? deps.newId() : null;
  const maxRetries = request.maxRetries ?? primary.maxRetries;
  const callDeadline = request.deadlineMs === undefined ? undefined : deps.clock() + request.deadlineMs;
  const deadlineAt =
    callDeadline === undefined
      ? context.deadlineAt
      : context.deadlineAt === undefined
        ? callDeadline
        : Math.min(callDeadline, context.deadlineAt);
  const callContext = deadlineAt === context.deadlineAt ? context : { ...context, deadlineAt };
  const tried: TriedModel[] = [];
  let busyRetries = 0;

  for (let index = 0; ; index += 1) {
    const model = models[index]!;
    const hasNext = index + 1 < models.length;
    const stepRequest = index === 0 ? request : { ...request, model };
    const settings = index === 0 ? primary : deps.settingsFor(model);
    const timeoutMs = request.timeoutMs ?? settings.timeoutMs;
    const startTimeoutMs = request.startTimeoutMs ?? settings.startTimeoutMs;
    // Busy retries and their waits happen before any answer: they spend the model's start allowance.
    const budgetEndsAt = Math.min(deps.clock() + startTimeoutMs, deadlineAt ?? Infinity);

    for (let busyTry = 0; ; busyTry += 1) {
      let next: Next | undefined;
      const decide = (status: RunStatus): Next => {
        if (next !== undefined) return next;
        const now = deps.clock();
        const busy = decideBusyRetry({
          status,
          retriesDone: busyTry,
          maxRetries: deps.busyRetries,
          now,
          budgetEndsAt,
          random: deps.random,
        });
        if (busy.retry) next = { kind: 'busy', waitMs: busy.waitMs };
        else if (fallsThrough({ status, hasNext, now, deadlineAt: deadlineAt ?? null })) next = { kind: 'fallback' };
        else next = { kind: 'stop' };
        return next;
      };
      const left = budgetEndsAt - deps.clock();
      const step: CallStep = {
        chainId,
        chainStep: chainId === null ? null : index,
        busyTry,
        timeoutMs,
        startTimeoutMs: busyTry === 0 ? startTimeoutMs : Math.max(1, Math.min(startTimeoutMs, left)),
        maxRetries,
        tried: [...tried],
        busyRetries,
        goesOn: (status) => decide(status).kind !== 'stop',
      };
      const result = await deps.attempt(stepRequest, callContext, step);
      const { status, run_id: runId, error } = result.metadata;
      const after = decide(status);
      if (after.kind === 'stop') return result;
      if (after.kind === 'fallback') {
        tried.push({ model, status, run_id: runId, error: error?.message ?? null });
        context.onPhase?.({ phase: 'next_model', model: models[index + 1]! });
        break;
      }
      busyRetries += 1;
      context.onPhase?.({ phase: 'busy_backoff', retry: busyTry + 1, of: deps.busyRetries, waitMs: after.waitMs });
      if (!(await deps.sleep(after.waitMs, context.signal))) {
        const stopped: CallStep = { ...step, busyTry: busyTry + 1, tried: [...tried], busyRetries, goesOn: () => false };
        return deps.cancelledWaiting(stepRequest, callContext, stopped);
      }
    }
  }
}
