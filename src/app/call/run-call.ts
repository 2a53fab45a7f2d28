import type { ModelSettings } from '../../config/model-tiers.js';
import type { RunStatus } from '../../policy/run-status.js';
import type { RunResult } from '../reply/run-result.js';
import { decide, STOP, type Next } from './decide.js';
import { planCall, stepFor, type CallPlan, type CallSoFar } from './plan.js';
import type { AttemptSource, CallContext, RunRequest } from '../attempt/types.js';

/** A call goes on to another host at most this often per model (each failover marks a host down for 5 s at least). */
const MAX_FAILOVERS = 8;

const BUSY_WAIT_CANCELLED =
  'cancelled while waiting to retry after Ollama answered "server busy" or "usage limit", or the CLI could not be started';

export interface CallDeps {
  readonly attempts: AttemptSource;
  /** Does the model's circuit refuse runs now? Read only when a failed attempt would hand the call on. */
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

/**
 * One `ollama_run` call (or one `ollama_run_many` job). Every decision of the call is here: its
 * model, then the models of its fallback chain while the one before cannot serve, each retried after
 * a jittered wait while the answer is "not now". An attempt only runs (`run`) and ends (`end`);
 * between the two the call decides whether it goes on, so an attempt it goes past is not the
 * task's failure. Every attempt has its own runs.jsonl line; the caller gets the last one.
 * Bounds: for each model, `start_timeout_ms` until its answer begins (its busy waits and retries
 * included, from its first attempt) and `timeout_ms` for the answer; `deadline_ms` (and a batch's
 * deadline) for the whole call.
 */
export async function runCall(deps: CallDeps, request: RunRequest, context: CallContext): Promise<RunResult> {
  const plan = planCall(deps, request, context);
  const soFar: CallSoFar = { tried: [], busyRetries: 0 };
  for (let index = 0; ; index += 1) {
    const result = await tryModel(deps, plan, index, soFar);
    if (result !== null) return result;
  }
}

/** The attempts of one model of the chain, its busy retries and host failovers included: the call's result, or null when the call moves on. */
async function tryModel(deps: CallDeps, plan: CallPlan, index: number, soFar: CallSoFar): Promise<RunResult | null> {
  const limits = plan.limits[index]!;
  const { events, signal } = plan.context;
  const budgetEndsAt = Math.min(deps.clock() + limits.startTimeoutMs, plan.deadlineAt ?? Infinity);
  let failovers = 0;
  for (let busyTry = 0; ;) {
    const attempt = deps.attempts.begin(stepFor(plan, index, busyTry, soFar, budgetEndsAt - deps.clock()), plan.context);
    const { status, failover } = await attempt.run();
    // Its host could not be reached and another can serve: at once there, neither a busy retry nor counted.
    if (failover === true && failovers < MAX_FAILOVERS) {
      failovers += 1;
      await attempt.end(true);
      continue;
    }
    const next = await nextAfter(deps, plan, index, busyTry, budgetEndsAt, status);
    const { result, own } = await attempt.end(next.kind !== 'stop');
    if (next.kind === 'stop') return result;
    if (next.kind === 'fallback') {
      const { model, run_id, error } = result.metadata;
      soFar.tried.push({ model, status, run_id, error: error?.message ?? null, own });
      await events.emit({ type: 'next_model', next: plan.models[index + 1]!, attempt: attempt.info });
      return null;
    }
    soFar.busyRetries += 1;
    await events.emit({
      type: 'busy_wait',
      retry: busyTry + 1,
      of: deps.busyRetries,
      waitMs: next.waitMs,
      status,
      attempt: attempt.info,
    });
    if (!(await deps.sleep(next.waitMs, signal))) return cancelledWaiting(deps, plan, index, busyTry + 1, soFar);
    busyTry += 1;
  }
}

/**
 * What the call does after an attempt of `plan.models[index]` ended with `status`: decided once,
 * before the attempt is settled. A failure hands the call on only when a later model takes runs
 * now (the only time the call reads other models' circuits); else the call ends with this model's verdict.
 */
async function nextAfter(
  deps: CallDeps,
  plan: CallPlan,
  index: number,
  busyTry: number,
  budgetEndsAt: number,
  status: RunStatus,
): Promise<Next> {
  const later = plan.models.slice(index + 1);
  const next = decide({
    status,
    busyTry,
    busyRetries: deps.busyRetries,
    now: deps.clock(),
    budgetEndsAt,
    deadlineAt: plan.deadlineAt ?? null,
    hasNext: later.length > 0,
    random: deps.random,
  });
  if (next.kind !== 'fallback') return next;
  for (const model of later) if (!(await deps.refuses(model))) return next;
  return STOP;
}

/** The call was cancelled while it waited to retry a "not now": its last attempt ends cancelled, nothing spawned. */
async function cancelledWaiting(
  deps: CallDeps,
  plan: CallPlan,
  index: number,
  busyTry: number,
  soFar: CallSoFar,
): Promise<RunResult> {
  const attempt = deps.attempts.begin(stepFor(plan, index, busyTry, soFar, 1), plan.context);
  attempt.stopBeforeRun(BUSY_WAIT_CANCELLED);
  return (await attempt.end(false)).result;
}
