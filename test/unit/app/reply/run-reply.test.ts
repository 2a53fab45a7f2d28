import { describe, expect, it } from 'vitest';
import { toRunMetadata, type WriteUp } from '../../../../src/app/attempt/write-up.js';
import { runReplySchema, toRunReply } from '../../../../src/app/reply/run-reply.js';
import { batchReplySchema, toBatchReply, summarize } from '../../../../src/app/call/run-batch.js';
import type { RunMetadata, RunResult } from '../../../../src/app/reply/run-result.js';
import type { CircuitView } from '../../../../src/policy/breaker.js';
import { decideEscalation, type EscalationDecision } from '../../../../src/policy/escalation.js';
import { OUTCOME_POLICY } from '../../../../src/policy/outcome-policy.js';
import { ESCALATION_REASONS, RUN_STATUSES, type RunStatus } from '../../../../src/policy/run-status.js';

const CLOSED: CircuitView = { state: 'closed', consecutive_failures: 0, retry_after_seconds: null };
const OPEN: CircuitView = { state: 'open', consecutive_failures: 5, retry_after_seconds: 60 };

/** One attempt written up the way the run service does it. */
function result(
  status: RunStatus,
  escalation: EscalationDecision,
  options: { circuit?: CircuitView; taskId?: string; retryCount?: number; answer?: string } = {},
): RunResult {
  const ok = OUTCOME_POLICY[status].ok;
  const answer = options.answer ?? (ok ? 'def add(a, b):\n    return a + b' : '');
  const attempt: WriteUp = {
    willRetry: false,
    runId: '3f1c9a0e-5b7d-4c1e-9a44-0d6f2b8e7c11',
    request: {
      model: 'qwen2.5-coder:7b',
      prompt: 'Write add()',
      ...(options.taskId ? { taskId: options.taskId } : { taskId: 'fm-42' }),
    },
    timeoutMs: 120_000,
    startTimeoutMs: 300_000,
    maxRetries: 3,
    status,
    settled: { retryCount: options.retryCount ?? 1, escalation, circuit: options.circuit ?? CLOSED, transition: null },
    classification: { status, error: ok ? null : `what went wrong: ${status}`, answer, thinking: '' },
    queueMs: 3,
    usage: {
      prompt_tokens: 41,
      output_tokens: 14,
      tokens_per_second: 38.52,
      prompt_tokens_per_second: 912.4,
      load_ms: 9.84,
      total_ms: 412.77,
    },
  };
  return { output: answer, metadata: toRunMetadata(attempt, []) };
}

/** Every escalation decision the policy can make for a status, plus a blocked task's repeated reasons. */
function decisionsFor(status: RunStatus): EscalationDecision[] {
  const decisions = [0, 3].flatMap((retryCount) =>
    [false, true].map((openedCircuit) => decideEscalation({ status, retryCount, maxRetries: 3, openedCircuit })),
  );
  if (status === 'blocked') decisions.push(...ESCALATION_REASONS.map((reason) => ({ escalate: true, reason })));
  const seen = new Set<string>();
  return decisions.filter((d) => !seen.has(JSON.stringify(d)) && seen.add(JSON.stringify(d)));
}

const CASES = RUN_STATUSES.flatMap((status) =>
  decisionsFor(status).flatMap((escalation) =>
    [CLOSED, OPEN].map((circuit) => ({ status, escalation, circuit, run: result(status, escalation, { circuit }) })),
  ),
);

/** What an agent pays for a result beyond the answer itself, as Claude Code hands it the structured content. */
const overhead = (run: RunResult) => JSON.stringify(toRunReply(run, 'concise')).length - run.output.length;

describe('the concise reply makes exactly the escalation decisions of the full metadata', () => {
  it('covers every status and every escalation reason', () => {
    expect(new Set(CASES.map((c) => c.status))).toEqual(new Set(RUN_STATUSES));
    const reasons = new Set(CASES.map((c) => toRunReply(c.run, 'concise').escalation_reason).filter(Boolean));
    expect(reasons).toEqual(new Set(ESCALATION_REASONS));
  });

  it.each(CASES.map((c) => [`${c.status} ${JSON.stringify(c.escalation)} ${c.circuit.state}`, c] as const))(
    '%s',
    (_name, { run }) => {
      const m = run.metadata;
      const concise = toRunReply(run, 'concise');
      const detailed = toRunReply(run, 'detailed');
      expect(concise.escalate).toBe(m.escalate);
      expect(concise.escalation_reason ?? null).toBe(m.escalate ? m.escalation_reason : null);
      expect(concise.ok).toBe(m.ok);
      expect(concise.status).toBe(m.status);
      // detailed = the same concise fields, plus the whole record
      expect(detailed).toEqual({ ...concise, metadata: m });
      // Both match the declared output schema exactly (clients such as the Python SDK check it).
      expect(runReplySchema.strict().parse(concise)).toEqual(concise);
      expect(runReplySchema.strict().parse(detailed)).toEqual(detailed);
      if (m.escalate) {
        expect(concise.next).toMatch(/^Stop: do not retry this task\b/);
        expect(concise.next).toMatch(/escalate it/);
        expect(concise.next).not.toMatch(/Retry with|wait/i);
        expect(concise).not.toHaveProperty('retries_left');
        expect(concise).not.toHaveProperty('retryable');
      } else {
        expect(concise.next ?? '').not.toMatch(/Stop|escalate/);
      }
      if (m.ok) {
        // Nothing to do but use the answer, unless the model is out of use for a while.
        if (m.circuit.retry_after_seconds === null) expect(concise).not.toHaveProperty('next');
        else expect(concise.next).toBe('Do not use qwen2.5-coder:7b for 60 s; run tasks on another model meanwhile.');
        expect(concise).not.toHaveProperty('error');
      } else {
        expect(concise.error).toBe(m.error?.message);
      }
    },
  );
});

describe('what the agent pays for a result (bytes beyond the answer)', () => {
  it('an ok result costs at most 150 bytes: the verdict, nothing null or zero', () => {
    const run = result('ok', { escalate: false, reason: null });
    expect(JSON.stringify(toRunReply(run, 'concise'))).toBe(
      `{"ok":true,"status":"ok","escalate":false,"output":${JSON.stringify(run.output)}}`,
    );
    expect(overhead(run)).toBeLessThanOrEqual(150);
  });

  it('a retryable failure costs at most 600 bytes, and says how to retry', () => {
    const run = result('timeout', { escalate: false, reason: null });
    const reply = toRunReply(run, 'concise');
    expect(reply).toMatchObject({ retryable: true, retries_left: 2 });
    expect(reply.next).toBe(
      'Retry with the same task_id (2 tries left), or with a larger timeout_ms than 120000 if the task needs more time.',
    );
    expect(overhead(run)).toBeLessThanOrEqual(600);
  });

  it('every escalation costs at most 600 bytes beyond its error text', () => {
    for (const c of CASES.filter((x) => x.run.metadata.escalate)) {
      expect(overhead(c.run) - (c.run.metadata.error?.message.length ?? 0), c.status).toBeLessThanOrEqual(600);
    }
  });
});

describe('next: one sentence that cannot be misread', () => {
  it('a circuit-open escalation says not to use the model for its time, and to escalate: never to wait and retry', () => {
    const run = result('circuit_open', { escalate: true, reason: 'circuit_open' }, { circuit: OPEN });
    const reply = toRunReply(run, 'concise');
    expect(reply.model_available_in_seconds).toBe(60);
    expect(reply.next).toBe(
      'Stop: do not retry this task on qwen2.5-coder:7b; escalate it, or run it on another model (circuit_open: qwen2.5-coder:7b failed too often in a row and takes no runs for 60 s).',
    );
  });

  it('another escalation on a model whose circuit is open also says not to use the model meanwhile', () => {
    const run = result('crashed', { escalate: true, reason: 'max_retries_exceeded' }, { circuit: OPEN, retryCount: 3 });
    expect(toRunReply(run, 'concise').next).toBe(
      'Stop: do not retry this task; escalate it to a human or a stronger model (max_retries_exceeded: it failed 4 times, max_retries 3). Do not use qwen2.5-coder:7b for 60 s; run tasks on another model meanwhile.',
    );
  });

  it('without a task_id, says which retry_count to pass', () => {
    const attempt = result('crashed', { escalate: false, reason: null });
    const noTask: RunResult = { ...attempt, metadata: { ...attempt.metadata, task_id: null } };
    expect(toRunReply(noTask, 'concise').next).toBe('Retry with retry_count 2 (2 tries left).');
  });

  it('a failure that needs a changed call says so instead of inviting a retry', () => {
    const run = result('prompt_too_long', { escalate: false, reason: null });
    expect(toRunReply(run, 'concise')).toMatchObject({
      retryable: false,
      next: 'Do not resend it unchanged: shorten or split the prompt, or use a model with a larger context (with the same task_id).',
    });
  });

  it('names the model that answered only when a fallback chain moved on, and a cold load only when one was paid', () => {
    const base = result('ok', { escalate: false, reason: null });
    const chained: RunMetadata = {
      ...base.metadata,
      model: 'llama3.2',
      fallback: [{ model: 'qwen2.5-coder:7b', status: 'crashed', run_id: 'x' }],
      cold_load: true,
      usage: { ...base.metadata.usage, load_ms: 3456.7 },
    };
    expect(toRunReply({ ...base, metadata: chained }, 'concise')).toMatchObject({ model: 'llama3.2', cold_load_ms: 3457 });
    expect(toRunReply(base, 'concise')).not.toHaveProperty('model');
    expect(toRunReply(base, 'concise')).not.toHaveProperty('cold_load_ms');
  });

  it('an answer cut to fit the reply says where the whole answer is', () => {
    const base = result('ok', { escalate: false, reason: null }, { answer: 'x'.repeat(50) });
    const file = { path: '/data/answers/r.txt', chars: 500, bytes: 500 };
    const cut: RunResult = { output: 'x'.repeat(50), metadata: { ...base.metadata, output_chars: 500, output_file: file } };
    expect(toRunReply(cut, 'concise')).toMatchObject({
      output_file: file,
      next: 'The answer is cut to fit the reply: read all of it (500 bytes) from /data/answers/r.txt.',
    });
  });
});

describe('a batch reply', () => {
  it('names each job by its task id, else by its place counted from 1', () => {
    const noTask = (r: RunResult): RunResult => ({ ...r, metadata: { ...r.metadata, task_id: null } });
    const escalated = (taskId?: string) => result('model_not_found', { escalate: true, reason: 'model_not_found' }, { taskId });
    const failed = (taskId?: string) => result('timeout', { escalate: false, reason: null }, { taskId });
    const results = [
      result('ok', { escalate: false, reason: null }),
      noTask(escalated()),
      escalated('fm-a'),
      noTask(failed()),
      escalated('fm-b'),
      noTask(escalated()),
      failed('fm-c'),
    ];
    const reply = toBatchReply({ batch_id: 'b', results, summary: summarize(results) }, 'concise');
    expect(reply.next).toBe(
      'Stop: do not retry tasks "fm-a", "fm-b" and jobs 2, 6; escalate them to a human or a stronger model (each job\'s next says why). ' +
        'Task "fm-c" and job 4 failed: do what each one\'s next says.',
    );
  });

  it('says first which jobs must stop and escalate, and leaves out the counts that are 0', () => {
    const results = [
      result('ok', { escalate: false, reason: null }),
      result('model_not_found', { escalate: true, reason: 'model_not_found' }),
      result('timeout', { escalate: false, reason: null }),
    ];
    const reply = toBatchReply({ batch_id: 'b', results, summary: summarize(results) }, 'concise');
    expect(reply.summary).toEqual({ total: 3, ok: 1, failed: 2, timed_out: 1, escalated: 1, escalate: true });
    expect(reply.next).toBe(
      'Stop: do not retry task "fm-42"; escalate it to a human or a stronger model (each job\'s next says why). Task "fm-42" failed: do what its next says.',
    );
    expect(reply.results.map((r) => r.escalate)).toEqual([false, true, false]);
    expect(reply).not.toHaveProperty('batch_id');
    const detailed = toBatchReply({ batch_id: 'b', results, summary: summarize(results) }, 'detailed');
    expect(detailed).toMatchObject({ batch_id: 'b', summary: summarize(results) });
    expect(detailed.results[1]!.metadata).toEqual(results[1]!.metadata);
    expect(batchReplySchema.strict().parse(reply)).toEqual(reply);
    expect(batchReplySchema.strict().parse(detailed)).toEqual(detailed);
  });
});
