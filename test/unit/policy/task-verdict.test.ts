import { describe, expect, it } from 'vitest';
import { decideEscalation } from '../../../src/policy/escalation.js';
import { RUN_STATUSES, type EscalationReason, type RunStatus } from '../../../src/policy/run-status.js';
import { ownEscalation, taskVerdict, type ModelVerdict } from '../../../src/policy/task-verdict.js';

const ran = (status: RunStatus, openedCircuit = false): ModelVerdict => ({ status, own: ownEscalation(status, openedCircuit) });
const judge = (verdicts: ModelVerdict[], retryCount = 0, maxRetries = 3, escalatedBefore: EscalationReason | null = null) =>
  taskVerdict({ verdicts, retryCount, maxRetries, escalatedBefore });

describe('taskVerdict: one model', () => {
  it('is exactly the escalation table for a call of one model, whatever the status, count and circuit', () => {
    for (const status of RUN_STATUSES) {
      if (status === 'blocked') continue; // a blocked attempt repeats the task's reason (the ledger supplies it)
      for (const retryCount of [0, 2, 3, 5])
        for (const openedCircuit of [false, true]) {
          const verdict = judge([ran(status, openedCircuit)], retryCount, 3);
          expect(verdict.escalation, `${status} at ${retryCount}, opened ${openedCircuit}`).toEqual(
            decideEscalation({ status, retryCount, maxRetries: 3, openedCircuit }),
          );
        }
    }
  });

  it('a circuit refusal met after waiting out a probe (no escalation of its own) neither counts nor escalates', () => {
    expect(judge([{ status: 'circuit_open', own: null }], 3, 3)).toEqual({
      standing: 0,
      counted: false,
      escalation: { escalate: false, reason: null },
    });
  });
});

describe('taskVerdict: a chain never escalates sooner than its first model alone', () => {
  const cases: [string, ModelVerdict[]][] = [
    ['a missing last fallback', [ran('crashed'), ran('model_not_found')]],
    ['a cloud fallback the account may not use', [ran('timeout'), ran('cloud_access_denied')]],
    ['a fallback that opened its own circuit', [ran('crashed'), ran('crashed', true)]],
    ['a fallback refused by its circuit', [ran('empty_output'), ran('circuit_open')]],
    ['a fallback that never started before the deadline', [ran('crashed'), ran('not_started')]],
    ['a fallback cancelled by the caller', [ran('crashed'), ran('cancelled')]],
    ['a sign-in fallback then a missing one', [ran('output_limit'), ran('signin_required'), ran('model_not_found')]],
  ];
  for (const [what, verdicts] of cases) {
    it(`${what}: the first model's retryable failure stands and is counted`, () => {
      const verdict = judge(verdicts);
      expect(verdict.escalation).toEqual({ escalate: false, reason: null });
      expect(verdict.counted).toBe(true);
      expect(verdicts[verdict.standing]!.own).toBeNull();
    });
  }

  it('a chain that reached max_retries escalates for the count, whatever came after the first model', () => {
    expect(judge([ran('crashed'), ran('not_started')], 3, 3).escalation).toEqual({
      escalate: true,
      reason: 'max_retries_exceeded',
    });
    expect(judge([ran('crashed'), ran('model_not_found')], 3, 3).escalation.reason).toBe('max_retries_exceeded');
  });

  it('a chain escalates on its own only when every model that ran does: the last one names the reason', () => {
    expect(judge([ran('model_not_found'), ran('cloud_access_denied')]).escalation).toEqual({
      escalate: true,
      reason: 'cloud_access_denied',
    });
    expect(judge([ran('model_not_found'), ran('circuit_open')]).escalation.reason).toBe('model_not_found');
    expect(judge([ran('circuit_open'), ran('model_not_found')]).escalation.reason).toBe('model_not_found');
  });

  it('a missing primary with a fallback that fails retryably does not escalate: retrying may succeed on the fallback', () => {
    const verdict = judge([ran('model_not_found'), ran('crashed')]);
    expect(verdict).toMatchObject({ standing: 1, counted: true, escalation: { escalate: false } });
  });

  it('a fallback that answers ends the call ok, whatever came before', () => {
    expect(judge([ran('model_not_found'), ran('ok')], 5, 3)).toEqual({
      standing: 1,
      counted: false,
      escalation: { escalate: false, reason: null },
    });
  });

  it('nothing ran (refused, then cancelled): not counted, and no escalation of a model never tried', () => {
    expect(judge([ran('circuit_open'), ran('cancelled')])).toMatchObject({ counted: false, escalation: { escalate: false } });
  });
});

describe('taskVerdict: a failure the server excuses (its own misjudgement)', () => {
  it('never counts toward max_retries, alone or after a model that failed', () => {
    const excused: ModelVerdict = { status: 'start_timeout', own: null, excused: true };
    expect(judge([excused], 3, 3)).toEqual({ standing: 0, counted: false, escalation: { escalate: false, reason: null } });
    expect(judge([ran('start_timeout')], 3, 3).escalation.escalate).toBe(true);
    expect(judge([ran('crashed'), excused], 1, 3)).toMatchObject({ standing: 0, counted: true, escalation: { escalate: false } });
  });
});

describe('taskVerdict: only a success or a reset ends an escalation', () => {
  for (const status of ['cancelled', 'not_started', 'unsupported_option', 'crashed', 'start_timeout'] as const) {
    it(`${status} after an escalation keeps the earlier reason`, () => {
      expect(judge([ran(status)], 0, 3, 'model_not_found').escalation).toEqual({ escalate: true, reason: 'model_not_found' });
    });
  }

  it('a new reason of its own replaces the earlier one', () => {
    expect(judge([ran('crashed')], 3, 3, 'circuit_open').escalation).toEqual({ escalate: true, reason: 'max_retries_exceeded' });
  });

  it('a success ends it', () => {
    expect(judge([ran('ok')], 3, 3, 'model_not_found').escalation).toEqual({ escalate: false, reason: null });
  });
});
