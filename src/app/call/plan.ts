import type { ModelSettings } from '../../config/model-tiers.js';
import { canonicalModelName } from '../../ollama/model-name.js';
import type { CallContext, Limits, RunRequest, Step, TriedModel } from '../attempt/types.js';
import { parseGoDuration } from '../../ollama/verbose-stats.js';

/** What a call is made of, resolved once when it starts: its models in order, its limits, its deadline. */
export interface CallPlan {
  readonly request: RunRequest;
  /** Its model, then its fallback models (or its tier rule's), each once. */
  readonly models: readonly string[];
  /** Each model's limits, in the models' order. */
  readonly limits: readonly Limits[];
  /** Shared by every model's attempt when the call has a chain; null without one. */
  readonly chainId: string | null;
  /** Epoch ms by which the whole call ends (its deadline_ms, or its batch's); undefined: none. */
  readonly deadlineAt: number | undefined;
  /** The call's context, with that deadline. */
  readonly context: CallContext;
}

/** What the call has gathered so far: the models that could not serve it, the busy retries made. */
export interface CallSoFar {
  readonly tried: TriedModel[];
  busyRetries: number;
}

interface PlanDeps {
  readonly settingsFor: (model: string) => ModelSettings;
  /** Epoch ms. */
  readonly clock: () => number;
  readonly newId: () => string;
}

export function planCall(deps: PlanDeps, request: RunRequest, context: CallContext): CallPlan {
  const primary = deps.settingsFor(request.model);
  const models = chainOf(request, primary.fallback);
  const own = request.deadlineMs === undefined ? undefined : deps.clock() + request.deadlineMs;
  const deadlineAt =
    own === undefined || context.deadlineAt === undefined ? (own ?? context.deadlineAt) : Math.min(own, context.deadlineAt);
  const maxRetries = request.maxRetries ?? primary.maxRetries;
  const keepAliveMs = keepAliveMsOf(request.keepalive);
  return {
    request,
    models,
    limits: models.map((model) => limitsOf(request, deps.settingsFor(model), maxRetries, keepAliveMs)),
    chainId: models.length > 1 ? deps.newId() : null,
    deadlineAt,
    context: { ...context, deadlineAt },
  };
}

/**
 * The step of the `index`-th model's `busyTry`-th attempt. Busy retries and their waits happen before
 * any answer: they spend the model's start allowance, of which `startLeftMs` is left.
 */
export function stepFor(plan: CallPlan, index: number, busyTry: number, soFar: CallSoFar, startLeftMs: number): Step {
  const model = plan.models[index]!;
  const limits = plan.limits[index]!;
  return {
    request: index === 0 ? plan.request : { ...plan.request, model },
    modelKey: canonicalModelName(model),
    limits: busyTry === 0 ? limits : { ...limits, startTimeoutMs: Math.max(1, Math.min(limits.startTimeoutMs, startLeftMs)) },
    chainId: plan.chainId,
    chainStep: plan.chainId === null ? null : index,
    busyTry,
    tried: [...soFar.tried],
    busyRetries: soFar.busyRetries,
  };
}

/** The chain: the models a call may attempt, in order: its own, then its `fallback_models` (or its tier rule's), itself left out. */
export function chainOf(request: RunRequest, tierFallback: readonly string[]): readonly string[] {
  const fallback = request.fallbackModels ?? tierFallback;
  const seen = new Set([canonicalModelName(request.model)]);
  const models = [request.model];
  for (const model of fallback) {
    const key = canonicalModelName(model);
    if (!seen.has(key)) models.push(model);
    seen.add(key);
  }
  return models;
}

/** A model's limits for this call: the call's own, else the model's tier's. */
function limitsOf(request: RunRequest, settings: ModelSettings, maxRetries: number, keepAliveMs: number | undefined): Limits {
  return {
    timeoutMs: request.timeoutMs ?? settings.timeoutMs,
    startTimeoutMs: request.startTimeoutMs ?? settings.startTimeoutMs,
    maxRetries,
    parallel: settings.parallel,
    breaker: { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs },
    keepAliveMs,
  };
}

/** A `keepalive` argument in ms (negative: forever, Infinity); undefined when the call gives none. */
function keepAliveMsOf(keepalive: string | undefined): number | undefined {
  if (keepalive === undefined) return undefined;
  const ns = parseGoDuration(keepalive);
  if (ns === null) return undefined;
  return ns < 0 ? Infinity : ns / 1e6;
}
