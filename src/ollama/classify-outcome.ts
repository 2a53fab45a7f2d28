import type { RunStatus } from '../policy/run-status.js';
import type { ProcessOutcome } from './model-process.js';
import { cleanStdout, isEmbeddingVector, isSigninNotice, signinUrl, type CleanedOutput } from './clean-output.js';
import { errorFromStderr, fileProblemFromStderr, isUnreachableMessage } from './cli-errors.js';

export interface Classification extends CleanedOutput {
  readonly status: RunStatus;
  /** Short, human-readable reason when the run did not succeed. */
  readonly error: string | null;
}

// Errors that come back from Ollama's HTTP API start with their status (`503 Service Unavailable: ...`),
// and the CLI may put other text in front: no pattern below is anchored at the start of the message.

/** The model failed to load or died: its health, so the circuit must hear of it (even if a cause below also appears). */
const MODEL_LOAD_FAILED =
  /(?:llama-server|llama runner) process has terminated|model runner has unexpectedly stopped|out-of-memory during startup/i;
/**
 * The registry could not be reached while pulling: `pull model manifest: Get "https://registry.ollama.ai/v2/...": <network
 * error>`. The network errors are the ones Ollama's own app treats as such (app/ui/ui.go isNetworkError).
 */
const PULL_FAILED =
  /(?:pull model manifest: |Get "https?:\/\/[^"]*\/v2\/[^"]*": ).*(?:connection refused|no such host|timeout|network is unreachable|connection reset|connection timed out|temporary failure|dial tcp|context deadline exceeded|broken pipe)/i;
const SERVER_BUSY = /server busy, please try again|maximum pending requests exceeded/i;
const RATE_LIMITED = /\b429 Too Many Requests\b|reached your \w+ usage limit/i;
const CLOUD_ACCESS_DENIED = /requires a subscription|ollama cloud is disabled/i;
const PROMPT_TOO_LONG = /prompt is longer than the context length|exceeds the model's maximum context length/i;
const MODEL_UNSUPPORTED =
  /does not support generate|image generation models are not currently supported|embedding models require input text/i;
const FILE_ERROR = /invalid file type: |file size exceeds maximum limit/i;
/** `pull model manifest: file does not exist`, and any other refusal of the pull (a newer Ollama needed, no access): someone must act. */
const MODEL_NOT_FOUND = /pull model manifest: |model ["']?[^"']*["']? not found|file does not exist/i;
const UNSUPPORTED_OPTION =
  /does not support thinking|unknown flag|unknown shorthand flag|missing unit in duration|invalid duration|invalid format/i;

/** Decide what a finished CLI process means. Pure: the same outcome always gets the same status. */
export function classifyOutcome(outcome: ProcessOutcome): Classification {
  const cleaned = cleanStdout(outcome.stdout);
  const stderrError = errorFromStderr(outcome.stderrTail);
  const result = (status: RunStatus, error: string | null): Classification => ({ ...cleaned, status, error });
  const failed = (status: RunStatus, error: string): Classification => ({ answer: '', thinking: '', status, error });

  if (outcome.spawnError) return result('cli_not_found', outcome.spawnError);
  if (outcome.cancelled) return result('cancelled', 'cancelled before the model finished');
  if (outcome.startTimedOut) return result('start_timeout', startTimeoutError(outcome));
  if (outcome.timedOut) {
    return result(
      'timeout',
      outcome.deadlineReached
        ? `the deadline (deadline_ms, or the batch's) passed while the model was answering; the model process was killed`
        : `no answer within ${outcome.timeoutMs} ms; the model process was killed`,
    );
  }
  if (outcome.truncated) {
    return result('output_limit', `output passed the ${outcome.maxOutputBytes}-byte cap; the model process was stopped`);
  }
  if (outcome.exitCode === 0 && outcome.signal === null) {
    if (isSigninNotice(outcome.stdout)) {
      const url = signinUrl(outcome.stdout);
      return failed(
        'signin_required',
        `this cloud model needs \`ollama signin\` on the server machine${url ? ` (or open ${url} there)` : ''}`,
      );
    }
    if (isEmbeddingVector(outcome.stdout)) {
      return failed(
        'model_unsupported',
        'this is an embedding model: it answered with a vector of numbers, not text. Use a text-generation model.',
      );
    }
    return cleaned.answer.trim() === '' ? result('empty_output', 'the model returned an empty answer') : result('ok', null);
  }
  const message =
    stderrError ??
    (outcome.signal ? `the ollama CLI was killed by ${outcome.signal}` : `the ollama CLI exited with code ${outcome.exitCode}`);
  const fileProblem = fileProblemFromStderr(outcome.stderrTail);
  if (fileProblem !== null || FILE_ERROR.test(message)) {
    return result(
      'input_file_error',
      `the prompt names an image or audio file, which this multimodal model's CLI tried to attach and could not read: ${fileProblem ?? message}. Remove the path from the prompt, or fix the file.`,
    );
  }
  if (MODEL_LOAD_FAILED.test(message)) return result('crashed', message);
  if (PULL_FAILED.test(message)) {
    return result('pull_failed', `the model had to be pulled and the registry could not be reached: ${message}`);
  }
  if (isUnreachableMessage(message)) return result('ollama_unreachable', message);
  if (SERVER_BUSY.test(message)) return result('server_busy', message);
  if (RATE_LIMITED.test(message)) return result('rate_limited', message);
  if (CLOUD_ACCESS_DENIED.test(message)) return result('cloud_access_denied', message);
  if (PROMPT_TOO_LONG.test(message)) {
    return result(
      'prompt_too_long',
      `the prompt does not fit this model's context window: shorten the prompt or split it into smaller tasks, or use a model with a larger context. Ollama said: ${message}`,
    );
  }
  if (MODEL_UNSUPPORTED.test(message)) return result('model_unsupported', `this model cannot generate text: ${message}`);
  if (MODEL_NOT_FOUND.test(message)) return result('model_not_found', message);
  if (UNSUPPORTED_OPTION.test(message)) return result('unsupported_option', message);
  return result('crashed', message);
}

function startTimeoutError(outcome: ProcessOutcome): string {
  const where = 'Ollama was still queueing the request, loading the model or reading the prompt';
  return outcome.deadlineReached
    ? `the deadline (deadline_ms, or the batch's) passed before the model began to answer (${where}); the CLI was stopped`
    : `the model did not begin to answer within ${outcome.startTimeoutMs} ms (start_timeout_ms): ${where}; the CLI was stopped`;
}
