import type { Classification } from '../../ollama/classify-outcome.js';
import type { CircuitView } from '../../policy/breaker.js';
import type { RunStatus } from '../../policy/run-status.js';
import type { EscalationReason } from '../../policy/run-status.js';

/** The error texts of attempts that did not run or were cut short: each says what to do next. */

export function notInstalledError(model: string, installed: readonly string[]): string {
  const list = installed.length > 0 ? installed.join(', ') : 'none';
  return `model "${model}" is not installed (installed: ${list}). Pull it with \`ollama pull ${model}\`, or pass allow_pull: true to let this run pull it.`;
}

export function blockedError(taskId: string | undefined, reason: EscalationReason): string {
  return `task "${taskId}" escalated earlier (${reason}) and OLLAMA_MCP_ESCALATION=block refuses further runs until it is reset with ollama_reset`;
}

/** Says how long the model is out of use: a time for the model, not for retrying the task, which escalates. */
export function circuitOpenError(circuit: CircuitView): string {
  const wait = circuit.retry_after_seconds === null ? 'until its probe run decides' : `for ${circuit.retry_after_seconds} s`;
  return `the model's circuit is open after ${circuit.consecutive_failures} failures in a row: the model takes no runs ${wait}`;
}

/**
 * A call stopped while it waited (`waitingFor`): cancelled, or its deadline passed: a batch's, or the
 * call's own `deadline_ms` (`inBatch` false).
 */
export function stoppedWaitingError(late: boolean, waitingFor: string, inBatch: boolean): string {
  if (!late) return `cancelled while waiting for ${waitingFor}`;
  return inBatch
    ? `the batch deadline passed while this job waited for ${waitingFor}`
    : `the call's deadline_ms passed while it waited for ${waitingFor}`;
}

export function probeWaitTimedOutError(startTimeoutMs: number): string {
  return `this call waited its whole start allowance (start_timeout_ms, ${Math.round(startTimeoutMs / 1000)} s) for the model's half-open probe run, which is still in flight; the probe's verdict decides whether the model takes runs again.`;
}

export function probeFailedError(circuitError: string): string {
  return `the model's probe run failed while this call waited for it: ${circuitError}`;
}

/** What is known of an attempt that produced no answer: its status and why. */
export function failure(status: RunStatus, error: string): Classification {
  return { status, error, answer: '', thinking: '' };
}

export const NOT_STARTED_ERROR = 'the batch deadline passed before this job started';
