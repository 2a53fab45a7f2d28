import type { AnswerFiles, SavedText } from './answer-files.js';
import { fitJsonBytes, replyBudget } from './reply-budget.js';
import type { RunWarning } from './run-result.js';

/** An attempt's answer as the reply will carry it. */
export interface FittedReply {
  /** The output in the structured content: the whole answer, or its start. */
  readonly output: string;
  /** The thinking in the structured content, only when the call asked for it. */
  readonly thinking?: string;
  /** The whole answer, when a channel of the reply (structured or text) carries only its start. */
  readonly outputFile: SavedText | null;
  readonly thinkingFile: SavedText | null;
  /** `answer_not_saved` when a cut text could not be kept. */
  readonly warnings: RunWarning[];
}

interface ReplyInput {
  readonly runId: string;
  readonly answer: string;
  readonly thinking: string;
  readonly includeThinking: boolean;
  /** How many results share the reply: a batch's job count, else 1. */
  readonly share: number;
}

/**
 * Fit an attempt's answer (and thinking) to its share of the reply, and keep whole in a file what
 * a channel of the reply cannot carry: the structured content carries up to its budget, the text
 * content only the start of a large answer. Decided before the attempt's runs.jsonl line is
 * written, so the line can say what the caller received.
 */
export async function fitReply(input: ReplyInput, files: AnswerFiles | null): Promise<FittedReply> {
  const budget = replyBudget(input.share);
  const output = fitJsonBytes(input.answer, budget.answerBytes);
  const thinking = input.includeThinking ? fitJsonBytes(input.thinking, budget.answerBytes - output.bytes) : null;
  const warnings: RunWarning[] = [];
  const keep = async (text: string, suffix: string, what: string, carried: string): Promise<SavedText | null> => {
    if (files === null) return null;
    try {
      return await files.save(`${input.runId}${suffix}`, text);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      warnings.push({
        kind: 'answer_not_saved',
        message: `the ${what} (${text.length} characters) is too large for the reply and could not be saved to a file (${why}): ${carried}`,
      });
      return null;
    }
  };
  const outputFile = output.cut
    ? await keep(input.answer, '.txt', 'answer', `output holds its first ${output.text.length} characters only`)
    : output.bytes > budget.textBytes
      ? await keep(input.answer, '.txt', 'answer', 'output holds it whole, the text content only its start')
      : null;
  const thinkingFile = thinking?.cut
    ? await keep(
        input.thinking,
        '.thinking.txt',
        'thinking text',
        `thinking holds its first ${thinking.text.length} characters only`,
      )
    : null;
  return {
    output: output.text,
    ...(thinking ? { thinking: thinking.text } : {}),
    outputFile,
    thinkingFile,
    warnings,
  };
}
