import { decideEscalation, NO_ESCALATION, type EscalationDecision } from './escalation.js';
import { OUTCOME_POLICY } from './outcome-policy.js';
import type { EscalationReason, RunStatus } from './run-status.js';

/** One model's attempt in a call, as its task sees it. */
export interface ModelVerdict {
  readonly status: RunStatus;
  /**
   * Its escalation that no retry count decides: the status needs a human, the attempt opened its
   * model's circuit, or the circuit refused it. Null when a retry of this model may still succeed.
   */
  readonly own: EscalationReason | null;
  /** The server's own misjudgement caused it (see app/attempt.ts): it says nothing of the task. */
  readonly excused?: boolean;
}

/** What a call comes to for its task: the attempt that stands for it, whether it counts, and the escalation. */
interface TaskVerdict {
  /** Index, in the call's verdicts, of the attempt whose status the task records. */
  readonly standing: number;
  /** Is the call one failed attempt of the task? */
  readonly counted: boolean;
  readonly escalation: EscalationDecision;
}

/**
 * Statuses that say nothing about the task when a model before them in the call ran: nothing was
 * run for this model (its circuit refused it, the call was cancelled or its deadline passed before
 * it started, the task is blocked). The earlier model's verdict then stands, as without the chain.
 */
const SAYS_NOTHING: ReadonlySet<RunStatus> = new Set(['circuit_open', 'cancelled', 'not_started', 'blocked']);

const saysNothing = (verdict: ModelVerdict): boolean => SAYS_NOTHING.has(verdict.status) || verdict.excused === true;
const countsForTask = (verdict: ModelVerdict): boolean =>
  OUTCOME_POLICY[verdict.status].countsAsTaskFailure && verdict.excused !== true;

/** A model's own escalation, from its status and whether its failure opened (or reopened) its circuit. */
export function ownEscalation(status: RunStatus, openedCircuit: boolean): EscalationReason | null {
  return decideEscalation({ status, retryCount: 0, maxRetries: 0, openedCircuit }).reason;
}

interface TaskVerdictInput {
  /** The call's attempts in order (one per model of its chain; the last is the one that ended it). */
  readonly verdicts: readonly ModelVerdict[];
  /** Failed attempts of the task recorded before this call (or the caller's figure, if larger). */
  readonly retryCount: number;
  /** 0 means no limit. */
  readonly maxRetries: number;
  /** The reason the task escalated before this call, null when it has not (or a success or reset ended it). */
  readonly escalatedBefore: EscalationReason | null;
}

/**
 * The task's verdict of one call. Pure.
 *
 * - A call that ended `ok` clears the task's failure streak and its escalation.
 * - A fallback never makes a task escalate sooner: a call escalates for a model's own reason (needs a
 *   human, opened its circuit) only when every model that ran escalates so; a model after which the
 *   call could not go on (its circuit refused, the deadline or a cancel came first) leaves the verdict
 *   of the model before it standing. So the call is one failed attempt of the task (its first model's
 *   failure, as without the chain) and escalates with `max_retries_exceeded` after `maxRetries` of them.
 * - Only a success or a reset ends an escalation: a later failure, or an attempt that counts for
 *   nothing, keeps the task escalated with its earlier reason.
 */
export function taskVerdict({ verdicts, retryCount, maxRetries, escalatedBefore }: TaskVerdictInput): TaskVerdict {
  const last = verdicts.length - 1;
  if (last < 0) throw new RangeError('a call has at least one attempt');
  if (OUTCOME_POLICY[verdicts[last]!.status].ok) return { standing: last, counted: false, escalation: NO_ESCALATION };
  const judged = verdicts.map((_, index) => index).filter((index) => !saysNothing(verdicts[index]!));
  if (judged.length === 0) judged.push(last);
  const counted = judged.some((index) => countsForTask(verdicts[index]!));
  const overLimit = maxRetries > 0 && retryCount >= maxRetries;
  const retryable = judged.filter((index) => verdicts[index]!.own === null);
  const standing = retryable.findLast((index) => countsForTask(verdicts[index]!)) ?? retryable.at(-1);
  const escalation =
    standing !== undefined
      ? counted && overLimit
        ? MAX_RETRIES
        : NO_ESCALATION
      : ownReasonOf(verdicts[judged.at(-1)!]!, counted && overLimit);
  const kept = !escalation.escalate && escalatedBefore !== null ? { escalate: true, reason: escalatedBefore } : escalation;
  return { standing: standing ?? judged.at(-1)!, counted, escalation: kept };
}

/** The escalation of a model that escalates on its own: a reason that needs a human first, then the count, then its circuit. */
function ownReasonOf(verdict: ModelVerdict, overLimit: boolean): EscalationDecision {
  const atOnce = OUTCOME_POLICY[verdict.status].escalateAtOnce;
  if (atOnce !== null && verdict.own === atOnce) return { escalate: true, reason: atOnce };
  return overLimit ? MAX_RETRIES : { escalate: true, reason: verdict.own };
}

const MAX_RETRIES: EscalationDecision = { escalate: true, reason: 'max_retries_exceeded' };
