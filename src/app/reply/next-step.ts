import { OUTCOME_POLICY } from '../../policy/outcome-policy.js';
import type { EscalationReason } from '../../policy/run-status.js';
import type { RunMetadata } from './run-result.js';

/**
 * One sentence that tells the agent what to do now with this result, in words it cannot misread;
 * null when there is nothing to do but use the answer. `outputCut`: the reply's output is only the
 * start of the answer. An escalation always says "Stop" and "escalate". A model's circuit time is
 * said as a time the model is not to be used, never as an invitation to retry an escalated task.
 */
export function nextStep(m: RunMetadata, outputCut: boolean): string | null {
  const sentences: string[] = [];
  if (m.escalate) sentences.push(escalationStep(m));
  else if (!m.ok) sentences.push(failureStep(m));
  const unavailable = modelUnavailable(m);
  if (unavailable !== null && !(m.escalate && m.escalation_reason === 'circuit_open')) sentences.push(unavailable);
  if (outputCut) sentences.push(cutAnswer(m));
  return sentences.length === 0 ? null : sentences.join(' ');
}

/** The reply's output is the start of a larger answer. */
function cutAnswer(m: RunMetadata): string {
  return m.output_file === null
    ? `The answer is cut to fit the reply, and the rest could not be saved (see warnings).`
    : `The answer is cut to fit the reply: read all of it (${m.output_file.bytes} bytes) from ${m.output_file.path}.`;
}

function modelUnavailable(m: RunMetadata): string | null {
  const seconds = m.circuit.retry_after_seconds;
  return seconds === null ? null : `Do not use ${m.model} for ${seconds} s; run tasks on another model meanwhile.`;
}

const STOP = 'Stop: do not retry this task; escalate it';

function escalationStep(m: RunMetadata): string {
  if (m.status === 'blocked') {
    return `${STOP} to a human or a stronger model: it escalated before (${m.escalation_reason}) and is blocked until a human clears it with ollama_reset.`;
  }
  const reason = m.escalation_reason;
  if (reason === 'max_retries_exceeded') {
    return `${STOP} to a human or a stronger model (max_retries_exceeded: it failed ${failuresOf(m)} times, max_retries ${m.max_retries}).`;
  }
  if (reason === 'circuit_open') return circuitStep(m);
  const model = reason === null ? null : modelThatNeedsHuman(m, reason);
  if (reason === null || model === null) {
    return `${STOP} to a human or a stronger model: it escalated before (${reason}) and stays escalated until a human clears it with ollama_reset.`;
  }
  return needsHumanStep(reason, model);
}

/** The task's failures so far, this call's included when it counted (its own status, or a model of its chain before it). */
function failuresOf(m: RunMetadata): number {
  const counted = [m.status, ...m.fallback.map((f) => f.status)].some((status) => OUTCOME_POLICY[status].countsAsTaskFailure);
  return m.retry_count + (counted ? 1 : 0);
}

function circuitStep(m: RunMetadata): string {
  const seconds = m.circuit.retry_after_seconds;
  if (m.circuit.state === 'closed') {
    return `Stop: do not retry this task; escalate it, or run it on another model (circuit_open: a model it ran on failed too often in a row; only a success or ollama_reset ends the escalation).`;
  }
  return `Stop: do not retry this task on ${m.model}; escalate it, or run it on another model (circuit_open: ${m.model} failed too often in a row${
    seconds === null ? '' : ` and takes no runs for ${seconds} s`
  }).`;
}

/** The model of the call whose outcome needs a human for `reason`, the last one first; null when none did (it escalated before). */
function modelThatNeedsHuman(m: RunMetadata, reason: EscalationReason): string | null {
  const tried = [...m.fallback, { model: m.model, status: m.status }];
  return tried.findLast((t) => OUTCOME_POLICY[t.status].escalateAtOnce === reason)?.model ?? null;
}

function needsHumanStep(reason: Exclude<EscalationReason, 'max_retries_exceeded' | 'circuit_open'>, model: string): string {
  switch (reason) {
    case 'model_not_found':
      return `${STOP} (model_not_found: ${model} is not installed; someone must ollama pull it), or run it on an installed model.`;
    case 'ollama_unreachable':
      return `${STOP} to a human (ollama_unreachable: the Ollama server is down or unreachable; someone must start ollama serve).`;
    case 'signin_required':
      return `${STOP} to a human (signin_required: this cloud model needs ollama signin on the server's machine).`;
    case 'cloud_access_denied':
      return `${STOP} to a human, or run it on a local model (cloud_access_denied: the account may not run this cloud model here).`;
    case 'cli_not_found':
      return `${STOP} to a human (cli_not_found: the ollama CLI cannot be run on the server's machine).`;
  }
}

function failureStep(m: RunMetadata): string {
  if (!m.retryable) return changeTheCall(m);
  const again = retryWords(m);
  switch (m.status) {
    case 'timeout':
      return `${again}, or with a larger timeout_ms than ${m.timeout_ms} if the task needs more time.`;
    case 'start_timeout':
      if (excused(m))
        return `${again}: this attempt is not counted (the server misjudged what fits in Ollama's memory; see warnings).`;
      return `${again} later, with a larger start_timeout_ms than ${m.start_timeout_ms}, or on a smaller model.`;
    case 'server_busy':
    case 'rate_limited':
    case 'pull_failed':
      return `${again} later.`;
    case 'spawn_failed':
      return `${again} later: the server's machine could not start the ollama CLI just now (too many open files or processes, or no memory); nothing ran.`;
    case 'circuit_open':
      return `${again}: ${m.model}'s probe run has not finished yet; or run the task on another model.`;
    case 'not_started':
      return `${again}, with a later deadline_ms.`;
    case 'cancelled':
      return `${again} if the task is still wanted.`;
    default:
      return `${again}.`;
  }
}

/** "Retry with the same task_id (2 tries left)", or the retry_count to pass when the call had no task_id. */
function retryWords(m: RunMetadata): string {
  const left = m.retries_left === null ? '' : ` (${m.retries_left} ${m.retries_left === 1 ? 'try' : 'tries'} left)`;
  if (m.task_id !== null) return `Retry with the same task_id${left}`;
  const next = OUTCOME_POLICY[m.status].countsAsTaskFailure && !excused(m) ? m.retry_count + 1 : m.retry_count;
  return `Retry with retry_count ${next}${left}`;
}

/** Did the server excuse this failure (its own misjudgement), so that it does not count? */
function excused(m: RunMetadata): boolean {
  return m.warnings.some((warning) => warning.kind === 'not_counted');
}

function changeTheCall(m: RunMetadata): string {
  const same = m.task_id !== null ? 'with the same task_id' : 'then';
  switch (m.status) {
    case 'prompt_too_long':
      return `Do not resend it unchanged: shorten or split the prompt, or use a model with a larger context (${same}).`;
    case 'model_unsupported':
      return `Do not resend it unchanged: ${m.model} cannot write text; run the task on a text model (${same}).`;
    case 'input_file_error':
      return `Do not resend it unchanged: fix or remove the file the prompt names (${same}).`;
    case 'unsupported_option':
      return `Do not resend it unchanged: drop the option ${m.model} refused (such as think).`;
    case 'invalid_input':
      return 'Nothing was run: fix the arguments the error names and call again.';
    default:
      return 'Do not resend it unchanged: change the call as the error says.';
  }
}
