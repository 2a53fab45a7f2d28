import type { EscalationDecision } from '../../policy/escalation.js';
import type { PromptFit } from '../../policy/prompt-fit.js';
import { retryCountFor, type TaskLedgerEntry } from '../../policy/task-ledger.js';
import type { RunWarning } from './run-result.js';

/** What the caller is told about an attempt whose ledger update failed. */
interface UnsavedVerdict {
  readonly retryCount: number;
  readonly escalation: EscalationDecision;
  readonly warning: RunWarning;
}

/**
 * retry_count and escalation of an attempt the ledger could not record, from what could still be
 * read (`ledger`: the last saved state, or `unreadable` when even reading failed). Counting then
 * uses the saved failure streak (or the caller's retry_count if larger), so a task whose ledger
 * already holds max_retries failures still escalates, and the warning says the count is frozen.
 */
export function unsavedVerdict(input: {
  readonly ledger: { readonly entry: TaskLedgerEntry | undefined } | 'unreadable';
  readonly taskId: string | undefined;
  /** The attempt's escalation, judged from what could still be read. */
  readonly escalation: EscalationDecision;
  readonly callerRetryCount: number | undefined;
  readonly error: string;
}): UnsavedVerdict {
  const readable = input.ledger !== 'unreadable';
  const entry = input.ledger === 'unreadable' ? undefined : input.ledger.entry;
  const retryCount = retryCountFor(entry, input.callerRetryCount);
  const task = input.taskId === undefined ? 'this attempt' : `task "${input.taskId}"`;
  const warning: RunWarning = readable
    ? {
        kind: 'ledger_not_updated',
        message: `the retry ledger could not be updated (${input.error}): this attempt is not counted for ${task} nor in the model's circuit; retry_count ${retryCount} is from the ledger as last saved and will not grow until it can be written again. Pass retry_count yourself meanwhile, and fix the state store: the telemetry dir, or Redis in team mode (ollama_health says which and why).`,
      }
    : {
        kind: 'ledger_unreadable',
        message: `the retry ledger could not be read or updated (${input.error}): retry_count ${retryCount} is only what the call passed, and this attempt is not counted. Pass retry_count yourself meanwhile, and fix the state store: the telemetry dir, or Redis in team mode (ollama_health says which and why).`,
      };
  return { retryCount, escalation: input.escalation, warning };
}

/** The circuit could not be updated at admission: the run was judged from the last saved state. */
export function circuitNotUpdated(model: string, error: string, admitted: boolean): RunWarning {
  return {
    kind: 'circuit_not_updated',
    message: `the circuit of ${model} could not be updated at admission (${error}); it was judged from the state as last saved, and the run was ${admitted ? 'let through' : 'refused'}.`,
  };
}

const SOURCE_TEXT = {
  loaded: 'the context `ollama ps` shows for the loaded model',
  num_ctx: "the model's num_ctx parameter",
  default: "one of Ollama's default contexts; the model's own could not be read",
} as const;

const REMEDY =
  'Shorten or split the prompt, or give the model a larger context: OLLAMA_CONTEXT_LENGTH in the Ollama server\'s environment, or a Modelfile with PARAMETER num_ctx (see "Token usage and the context window" in the README).';

/** The prompt probably did not fit the model's context (see policy/prompt-fit.ts). */
export function promptMayBeTruncated(fit: Extract<PromptFit, { fits: false }>): RunWarning {
  const { promptTokens, contextSize, sign, source } = fit;
  const message =
    sign === 'full'
      ? `prompt used ${promptTokens} tokens of a ${contextSize}-token context (${SOURCE_TEXT[source]}): Ollama keeps only the end of a prompt that does not fit, so the start of this one (its instructions, often) was probably dropped, or the answer had no room left. ${REMEDY}`
      : `prompt used ${promptTokens} tokens, exactly what Ollama (v0.30.11 and later) cuts a prompt too long for a ${contextSize}-token context down to (${SOURCE_TEXT[source]}): the start of this prompt was probably dropped. ${REMEDY}`;
  return { kind: 'prompt_may_be_truncated', message };
}

/** A failure this server's own misjudgement caused (`why`): recorded for its task, not counted. */
export function notCounted(why: string): RunWarning {
  return { kind: 'not_counted', message: why };
}
