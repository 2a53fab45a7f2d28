import type { AnswerFiles } from './answer-files.js';
import type { CallStep } from './call-runner.js';
import { fitReply, type FittedReply } from './reply-fit.js';
import { toRunMetadata, toRunRecord, type Attempt, type StepFacts } from './run-report.js';
import type { RunContext } from './run-request.js';
import type { RunResult, RunWarning } from './run-result.js';
import type { RunLog } from '../telemetry/run-log.js';

/** What the attempt's write-up needs beyond the attempt itself. */
export interface RecordExtras {
  readonly warnings: readonly RunWarning[];
  /** The tool the line names when not `ollama_run`/`ollama_run_many` (an invalid call's). */
  readonly tool?: string;
  /** Its place in its call, and whether the call goes on after it. */
  readonly step?: CallStep;
  readonly willRetry: boolean;
}

export interface AttemptRecorderDeps {
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

  async record(plain: Attempt, extras: RecordExtras, context: RunContext): Promise<RunResult> {
    const facts = extras.step ? stepFacts(extras.step, extras.willRetry) : undefined;
    const attempt = facts ? inCall(plain, facts, extras.step!) : plain;
    if (!extras.willRetry) context.onPhase?.({ phase: 'done' });
    const includeThinking = attempt.request.includeThinking === true;
    // Decided before the line is written, so that the line says what the caller received.
    const reply = await this.#fitReply(attempt, extras.willRetry, context.replyShare ?? 1);
    const metadata = toRunMetadata(attempt, [...extras.warnings, ...reply.warnings], {
      output: reply.outputFile,
      thinking: reply.thinkingFile,
    });
    await this.#deps.log.record(
      toRunRecord(metadata, {
        ts: this.#deps.clock(),
        batchId: context.batchId ?? null,
        tool: extras.tool ?? (context.batchId ? 'ollama_run_many' : 'ollama_run'),
        transition: attempt.settled.transition,
        prompt: attempt.request.prompt,
        output: attempt.classification.answer,
        serverPid: process.pid,
        ...(facts ? { step: facts } : {}),
        returned: { outputChars: reply.output.length, thinkingChars: includeThinking ? (reply.thinking ?? '').length : null },
      }),
    );
    return { output: reply.output, ...(includeThinking ? { thinking: reply.thinking ?? '' } : {}), metadata };
  }

  /** The answer as the reply carries it. An attempt its call goes past reaches no caller: left whole. */
  #fitReply(attempt: Attempt, willRetry: boolean, share: number): Promise<FittedReply> {
    const { answer, thinking } = attempt.classification;
    const includeThinking = attempt.request.includeThinking === true;
    if (willRetry) return Promise.resolve({ output: answer, thinking, outputFile: null, thinkingFile: null, warnings: [] });
    return fitReply({ runId: attempt.runId, answer, thinking, includeThinking, share }, this.#deps.answers);
  }
}

/** What an attempt's line and metadata say of its place in the call. */
function stepFacts(step: CallStep, willRetry: boolean): StepFacts {
  return {
    chainId: step.chainId,
    chainStep: step.chainStep,
    busyTry: step.busyTry,
    willRetry,
    fallback: step.tried.map(({ model, status, run_id }) => ({ model, status, run_id })),
    busyRetries: step.busyRetries,
  };
}

/**
 * An attempt as its call tells it: one the call goes past escalates nothing (the call goes on);
 * the call's failed result names the models tried before it, and how each ended.
 */
function inCall(attempt: Attempt, facts: StepFacts, step: CallStep): Attempt {
  if (facts.willRetry) {
    return { ...attempt, step: facts, settled: { ...attempt.settled, escalation: { escalate: false, reason: null } } };
  }
  const error = attempt.classification.error;
  if (step.tried.length === 0 || error === undefined || error === null) return { ...attempt, step: facts };
  const before = step.tried.map((t) => `${t.model} (${t.status})`).join(', ');
  const classification = {
    ...attempt.classification,
    error: `models tried before: ${before}; ${attempt.request.model}: ${error}`,
  };
  return { ...attempt, step: facts, classification };
}
