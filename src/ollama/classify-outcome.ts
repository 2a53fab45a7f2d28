import type { RunStatus } from '../policy/run-status.js';
import type { ProcessOutcome } from './model-process.js';
import { cleanStdout, isEmbeddingVector, isSigninNotice, signinUrl, type CleanedOutput } from './clean-output.js';
import { errorFromStderr, fileProblemFromStderr, isResourceSpawnError, isUnreachableMessage } from './cli-errors.js';

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

/** A failed run's message, in the order the patterns are tried: the status it gets and the error said. */
const FAILURES: readonly {
  readonly pattern: { test(text: string): boolean };
  readonly status: RunStatus;
  readonly error?: (message: string) => string;
}[] = [
  { pattern: MODEL_LOAD_FAILED, status: 'crashed' },
  {
    pattern: PULL_FAILED,
    status: 'pull_failed',
    error: (message) => `the model had to be pulled and the registry could not be reached: ${message}`,
  },
  { pattern: { test: isUnreachableMessage }, status: 'ollama_unreachable' },
  { pattern: SERVER_BUSY, status: 'server_busy' },
  { pattern: RATE_LIMITED, status: 'rate_limited' },
  { pattern: CLOUD_ACCESS_DENIED, status: 'cloud_access_denied' },
  {
    pattern: PROMPT_TOO_LONG,
    status: 'prompt_too_long',
    error: (message) =>
      `the prompt does not fit this model's context window: shorten the prompt or split it into smaller tasks, or use a model with a larger context. Ollama said: ${message}`,
  },
  { pattern: MODEL_UNSUPPORTED, status: 'model_unsupported', error: (message) => `this model cannot generate text: ${message}` },
  { pattern: MODEL_NOT_FOUND, status: 'model_not_found' },
  { pattern: UNSUPPORTED_OPTION, status: 'unsupported_option' },
];

/** Decide what a finished CLI process means. Pure: the same outcome always gets the same status. */
export function classifyOutcome(outcome: ProcessOutcome): Classification {
  const cleaned = cleanStdout(outcome.stdout);
  const result = (status: RunStatus, error: string | null): Classification => ({ ...cleaned, status, error });
  if (outcome.spawnError) {
    // Out of descriptors, processes or memory passes by itself; any other spawn error means the CLI cannot be executed.
    return result(isResourceSpawnError(outcome.spawnErrorCode) ? 'spawn_failed' : 'cli_not_found', outcome.spawnError);
  }
  if (outcome.cancelled) return result('cancelled', 'cancelled before the model finished');
  if (outcome.startTimedOut) return result('start_timeout', startTimeoutError(outcome));
  if (outcome.timedOut) return result('timeout', timeoutError(outcome));
  if (outcome.truncated) {
    return result('output_limit', `output passed the ${outcome.maxOutputBytes}-byte cap; the model process was stopped`);
  }
  if (outcome.exitCode === 0 && outcome.signal === null) return classifyAnswer(outcome.stdout, cleaned);
  const message =
    errorFromStderr(outcome.stderrTail) ??
    (outcome.signal ? `the ollama CLI was killed by ${outcome.signal}` : `the ollama CLI exited with code ${outcome.exitCode}`);
  const fileProblem = fileProblemFromStderr(outcome.stderrTail);
  if (fileProblem !== null || FILE_ERROR.test(message)) {
    return result(
      'input_file_error',
      `the prompt names an image or audio file, which this multimodal model's CLI tried to attach and could not read: ${fileProblem ?? message}. Remove the path from the prompt, or fix the file.`,
    );
  }
  const failure = FAILURES.find(({ pattern }) => pattern.test(message));
  return result(failure?.status ?? 'crashed', failure?.error?.(message) ?? message);
}

/** A CLI that exited 0 printed an answer, the cloud sign-in notice, or an embedding model's vector. */
function classifyAnswer(stdout: string, cleaned: CleanedOutput): Classification {
  const failed = (status: RunStatus, error: string): Classification => ({ answer: '', thinking: '', status, error });
  if (isSigninNotice(stdout)) {
    const url = signinUrl(stdout);
    return failed(
      'signin_required',
      `this cloud model needs \`ollama signin\` on the server machine${url ? ` (or open ${url} there)` : ''}`,
    );
  }
  if (isEmbeddingVector(stdout)) {
    return failed(
      'model_unsupported',
      'this is an embedding model: it answered with a vector of numbers, not text. Use a text-generation model.',
    );
  }
  if (cleaned.answer.trim() === '') return { ...cleaned, status: 'empty_output', error: 'the model returned an empty answer' };
  return { ...cleaned, status: 'ok', error: null };
}

function timeoutError(outcome: ProcessOutcome): string {
  return outcome.deadlineReached
    ? `the deadline (deadline_ms, or the batch's) passed while the model was answering; the model process was killed`
    : `no answer within ${outcome.timeoutMs} ms; the model process was killed`;
}

function startTimeoutError(outcome: ProcessOutcome): string {
  const where = 'Ollama was still queueing the request, loading the model or reading the prompt';
  return outcome.deadlineReached
    ? `the deadline (deadline_ms, or the batch's) passed before the model began to answer (${where}); the CLI was stopped`
    : `the model did not begin to answer within ${outcome.startTimeoutMs} ms (start_timeout_ms): ${where}; the CLI was stopped`;
}
