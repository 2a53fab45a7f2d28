import { fitJsonBytes, replyBudget } from '../app/reply/reply-budget.js';
import type { ResponseFormat } from '../app/reply/run-reply.js';
import { nextStep } from '../app/reply/next-step.js';
import type { RunMetadata, RunResult } from '../app/reply/run-result.js';

/**
 * The text content of a run, for the clients that show the model (or a human) only the text: an
 * escalation first, the answer, then the same facts as the concise structured content in a few
 * lines (`detailed` adds the token figures and the whole record). A large answer
 * is not repeated whole (it is in the structured content already): the text shows its start and
 * says where the whole answer is. `share`: how many results share the reply (a batch's job count).
 */
export function renderRunText(result: RunResult, format: ResponseFormat, share = 1): string {
  const m = result.metadata;
  const parts: string[] = [];
  if (m.escalate)
    parts.push(`ESCALATE: STOP RETRYING${m.task_id ? ` TASK "${m.task_id}"` : ''}. Reason: ${m.escalation_reason}.`);
  if (result.output !== '') parts.push(answerText(result, replyBudget(share).textBytes));
  const lines = [verdict(result)];
  const next = nextStep(m, result.output.length < m.output_chars);
  if (next !== null) lines.push(`NEXT: ${next}`);
  // The counting behind retry_count/escalate may lag: the agent must see it next to the verdict.
  for (const warning of m.warnings) lines.push(`WARNING (${warning.kind}): ${warning.message}`);
  if (format === 'detailed') {
    const tokens = usageLine(m.usage);
    if (tokens !== null) lines.push(tokens);
  }
  parts.push(lines.join('\n'));
  if (format === 'detailed') parts.push(`metadata: ${JSON.stringify(m)}`);
  return parts.join('\n\n');
}

function verdict({ metadata: m }: RunResult): string {
  if (m.status === 'invalid_input') return `REJECTED (invalid_input), nothing was run. ${m.error?.message ?? ''}`;
  const task = m.task_id ? `task ${m.task_id}, ` : '';
  if (!m.ok) {
    const left = m.retries_left !== null && !m.escalate ? `, ${m.retries_left} retries left` : '';
    return `FAILED (${m.status}): ${m.error?.message ?? 'no detail'} [${task}model ${m.model}, retry_count ${m.retry_count}${left}]`;
  }
  const fellBack =
    m.fallback.length === 0 ? '' : ` after ${m.fallback.map((f) => `${f.model} (${f.status})`).join(', ')} could not serve it`;
  const busy = m.busy_retries === 0 ? '' : `, ${m.busy_retries} busy ${m.busy_retries === 1 ? 'retry' : 'retries'}`;
  const cold = m.cold_load && m.usage.load_ms !== null ? `, cold load ${(m.usage.load_ms / 1000).toFixed(1)} s` : '';
  return `ok: ${m.model} answered in ${m.duration_ms} ms${fellBack} (${task}retry_count ${m.retry_count}${busy}${cold}).`;
}

/** The answer, or its start and where the whole answer is. */
function answerText({ output, metadata: m }: RunResult, budget: number): string {
  const shown = fitJsonBytes(output, budget);
  const whole = output.length === m.output_chars;
  if (!shown.cut && whole) return output;
  const file = m.output_file ? `the file ${m.output_file.path} (${m.output_file.bytes} bytes)` : null;
  const where = whole
    ? `structuredContent.output${file ? ` and ${file}` : ''}`
    : (file ?? 'no file: it could not be saved (see the warning)');
  return `${shown.text}\n[answer cut here: ${m.output_chars} characters in all; the whole answer is in ${where}]`;
}

/** A load longer than this is worth a word in the verdict: the model was not in memory. */
const COLD_LOAD_MS = 1_000;

/**
 * One short line of token figures for the text verdict (`tokens: 26 in, 291 out, 123.65 tok/s`),
 * or `null` when the CLI reported none.
 */
function usageLine(usage: RunMetadata['usage']): string | null {
  if (usage.prompt_tokens === null && usage.output_tokens === null) return null;
  const parts = [`tokens: ${usage.prompt_tokens ?? '?'} in, ${usage.output_tokens ?? '?'} out`];
  if (usage.tokens_per_second !== null) parts.push(`${usage.tokens_per_second} tok/s`);
  let line = parts.join(', ');
  if (usage.load_ms !== null && usage.load_ms >= COLD_LOAD_MS) line += ` (cold load: ${(usage.load_ms / 1000).toFixed(1)} s)`;
  return line;
}
