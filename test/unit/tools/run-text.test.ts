import { describe, expect, it } from 'vitest';
import { replyBudget } from '../../../src/app/reply/reply-budget.js';
import { toRunMetadata, type WriteUp } from '../../../src/app/attempt/write-up.js';
import type { RunResult } from '../../../src/app/reply/run-result.js';
import type { EscalationDecision } from '../../../src/policy/escalation.js';
import type { RunStatus } from '../../../src/policy/run-status.js';
import { renderRunText } from '../../../src/tools/run-text.js';

function result(status: RunStatus, escalation: EscalationDecision, answer = '', error: string | null = null): RunResult {
  const attempt: WriteUp = {
    willRetry: false,
    runId: 'run-1',
    request: { model: 'llama3.2', prompt: 'p', taskId: 'fm-42' },
    timeoutMs: 120_000,
    startTimeoutMs: 300_000,
    maxRetries: 3,
    status,
    settled: {
      retryCount: 3,
      escalation,
      circuit: { state: 'closed', consecutive_failures: 0, retry_after_seconds: null },
      transition: null,
    },
    classification: { status, error, answer, thinking: '' },
  };
  return { output: answer, metadata: toRunMetadata(attempt, []) };
}

describe('the text content: the same facts as the concise result, in a few lines', () => {
  it('an ok run: the answer, then the verdict; no JSON', () => {
    const text = renderRunText(result('ok', { escalate: false, reason: null }, 'the answer'), 'concise');
    expect(text).toMatch(/^the answer\n\nok: llama3\.2 answered in 0 ms \(task fm-42, retry_count 3\)\.$/);
  });

  it('an escalation: a line in capitals first, then the verdict and the sentence that says to stop', () => {
    const text = renderRunText(
      result('timeout', { escalate: true, reason: 'max_retries_exceeded' }, '', 'no answer within 120000 ms'),
      'concise',
    );
    expect(text).toBe(
      [
        'ESCALATE: STOP RETRYING TASK "fm-42". Reason: max_retries_exceeded.',
        '',
        'FAILED (timeout): no answer within 120000 ms [task fm-42, model llama3.2, retry_count 3]',
        'NEXT: Stop: do not retry this task; escalate it to a human or a stronger model (max_retries_exceeded: it failed 4 times, max_retries 3).',
      ].join('\n'),
    );
  });

  it('detailed: adds the whole record as JSON', () => {
    const run = result('ok', { escalate: false, reason: null }, 'x');
    expect(renderRunText(run, 'detailed')).toContain(`metadata: ${JSON.stringify(run.metadata)}`);
  });

  it('a large answer is not repeated whole: its start, and where the whole answer is', () => {
    const answer = 'a'.repeat(replyBudget(1).textBytes + 10);
    const run = result('ok', { escalate: false, reason: null }, answer);
    const withFile: RunResult = {
      ...run,
      metadata: { ...run.metadata, output_file: { path: '/d/answers/run-1.txt', chars: answer.length, bytes: answer.length } },
    };
    const text = renderRunText(withFile, 'concise');
    expect(text.length).toBeLessThan(replyBudget(1).textBytes + 500);
    expect(text).toContain(
      `\n[answer cut here: ${answer.length} characters in all; the whole answer is in structuredContent.output and the file /d/answers/run-1.txt (${answer.length} bytes)]`,
    );
    // A batch of 100 shares the text: each job shows less.
    expect(renderRunText(withFile, 'concise', 100).length).toBeLessThan(replyBudget(100).textBytes + 500);
  });
});
