import type { AnswerFiles } from '../reply/answer-files.js';
import { fitReply, type FittedReply } from '../reply/reply-fit.js';
import type { RunResult, RunWarning } from '../reply/run-result.js';
import { toRunMetadata, toRunRecord, type WriteUp } from './write-up.js';
import type { RunLog } from '../../telemetry/run-log.js';
import type { RunContext } from './types.js';

/** What the write-up of an attempt needs of its call. */
export interface RecordContext extends Pick<RunContext, 'batchId' | 'replyShare'> {
  /** The tool the line names when not `ollama_run`/`ollama_run_many` (an invalid call's). */
  readonly tool?: string | undefined;
}

interface AttemptRecorderDeps {
  readonly log: RunLog;
  /** Epoch ms. */
  readonly clock: () => number;
  /** Where answers too large for a reply are kept whole; null: nowhere. */
  readonly answers: AnswerFiles | null;
}

/**
 * The end of every attempt, refusals included: the answer fitted to its reply, one runs.jsonl line
 * that says what the caller received, and the result. Every attempt passes here exactly once.
 */
export class AttemptRecorder {
  readonly #deps: AttemptRecorderDeps;

  constructor(deps: AttemptRecorderDeps) {
    this.#deps = deps;
  }

  async record(plain: WriteUp, warnings: readonly RunWarning[], context: RecordContext): Promise<RunResult> {
    const attempt = inCall(plain);
    const includeThinking = attempt.request.includeThinking === true;
    // Decided before the line is written, so that the line says what the caller received.
    const reply = await this.#fitReply(attempt, context.replyShare ?? 1);
    const metadata = toRunMetadata(attempt, [...warnings, ...reply.warnings], {
      output: reply.outputFile,
      thinking: reply.thinkingFile,
    });
    const { step, willRetry } = attempt;
    await this.#deps.log.record(
      toRunRecord(metadata, {
        ts: this.#deps.clock(),
        batchId: context.batchId ?? null,
        tool: context.tool ?? (context.batchId ? 'ollama_run_many' : 'ollama_run'),
        transition: attempt.settled.transition,
        prompt: attempt.request.prompt,
        output: attempt.classification.answer,
        serverPid: process.pid,
        host: attempt.host ?? null,
        step: step ? { chainStep: step.chainStep, busyTry: step.busyTry, willRetry } : undefined,
        returned: { outputChars: reply.output.length, thinkingChars: includeThinking ? (reply.thinking ?? '').length : null },
      }),
    );
    return { output: reply.output, ...(includeThinking ? { thinking: reply.thinking ?? '' } : {}), metadata };
  }

  /** The answer as the reply carries it. An attempt its call goes past reaches no caller: left whole. */
  #fitReply(attempt: WriteUp, share: number): Promise<FittedReply> {
    const { answer, thinking } = attempt.classification;
    const includeThinking = attempt.request.includeThinking === true;
    if (attempt.willRetry)
      return Promise.resolve({ output: answer, thinking, outputFile: null, thinkingFile: null, warnings: [] });
    return fitReply({ runId: attempt.runId, answer, thinking, includeThinking, share }, this.#deps.answers);
  }
}

/**
 * An attempt as its call tells it: one the call goes past escalates nothing (the call goes on);
 * the call's failed result names the models tried before it, and how each ended.
 */
function inCall(attempt: WriteUp): WriteUp {
  if (attempt.willRetry) return { ...attempt, settled: { ...attempt.settled, escalation: { escalate: false, reason: null } } };
  const error = attempt.classification.error;
  const tried = attempt.step?.tried ?? [];
  if (tried.length === 0 || error === undefined || error === null) return attempt;
  const before = tried.map((t) => `${t.model} (${t.status})`).join(', ');
  const classification = {
    ...attempt.classification,
    error: `models tried before: ${before}; ${attempt.request.model}: ${error}`,
  };
  return { ...attempt, classification };
}
