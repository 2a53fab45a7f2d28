import type { RunStatus } from '../policy/run-status.js';
import type { ProcessOutcome } from './model-process.js';
import { cleanStdout, errorFromStderr, type CleanedOutput } from './clean-output.js';

export interface Classification extends CleanedOutput {
  readonly status: RunStatus;
  /** Short, human-readable reason when the run did not succeed. */
  readonly error: string | null;
}

const SIGNIN_REQUIRED = 'You need to be signed in to Ollama';
const UNREACHABLE = /could not connect to ollama|connection refused|timed out waiting for server to start/i;
const SERVER_BUSY = /server busy/i;
const MODEL_NOT_FOUND = /^pull model manifest|model ["']?[^"']*["']? not found|file does not exist/i;
const UNSUPPORTED_OPTION =
  /does not support thinking|unknown flag|unknown shorthand flag|missing unit in duration|invalid duration|invalid format/i;

/** Decide what a finished CLI process means. Pure: the same outcome always gets the same status. */
export function classifyOutcome(outcome: ProcessOutcome): Classification {
  const cleaned = cleanStdout(outcome.stdout);
  const stderrError = errorFromStderr(outcome.stderrTail);
  const result = (status: RunStatus, error: string | null): Classification => ({ ...cleaned, status, error });

  if (outcome.spawnError) return result('cli_not_found', outcome.spawnError);
  if (outcome.cancelled) return result('cancelled', 'cancelled before the model finished');
  if (outcome.timedOut) return result('timeout', `no answer within ${outcome.timeoutMs} ms; the model process was killed`);
  if (outcome.truncated) {
    return result('output_limit', `output passed the ${outcome.maxOutputBytes}-byte cap; the model process was stopped`);
  }
  if (cleaned.answer.includes(SIGNIN_REQUIRED) || stderrError?.includes(SIGNIN_REQUIRED)) {
    return result('signin_required', 'this cloud model needs `ollama signin` on the server machine');
  }
  if (outcome.exitCode === 0 && outcome.signal === null) {
    return cleaned.answer.trim() === '' ? result('empty_output', 'the model returned an empty answer') : result('ok', null);
  }
  const message =
    stderrError ??
    (outcome.signal ? `the ollama CLI was killed by ${outcome.signal}` : `the ollama CLI exited with code ${outcome.exitCode}`);
  if (UNREACHABLE.test(message)) return result('ollama_unreachable', message);
  if (SERVER_BUSY.test(message)) return result('server_busy', message);
  if (MODEL_NOT_FOUND.test(message)) return result('model_not_found', message);
  if (UNSUPPORTED_OPTION.test(message)) return result('unsupported_option', message);
  return result('crashed', message);
}
