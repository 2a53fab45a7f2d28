import { describe, expect, it } from 'vitest';
import { decideEscalation } from '../../../src/policy/escalation.js';
import { OUTCOME_POLICY } from '../../../src/policy/outcome-policy.js';
import { RUN_STATUSES } from '../../../src/policy/run-status.js';

const base = { retryCount: 0, maxRetries: 3, openedCircuit: false };

describe('escalation policy', () => {
  it('with max_retries 3, failures with retry_count 0-2 do not escalate and the 4th failure does', () => {
    for (const retryCount of [0, 1, 2]) {
      expect(decideEscalation({ ...base, status: 'timeout', retryCount })).toEqual({ escalate: false, reason: null });
    }
    expect(decideEscalation({ ...base, status: 'timeout', retryCount: 3 })).toEqual({
      escalate: true,
      reason: 'max_retries_exceeded',
    });
    expect(decideEscalation({ ...base, status: 'crashed', retryCount: 7 })).toEqual({
      escalate: true,
      reason: 'max_retries_exceeded',
    });
  });

  it('max_retries 0 means no limit', () => {
    expect(decideEscalation({ ...base, status: 'crashed', retryCount: 500, maxRetries: 0 }).escalate).toBe(false);
  });

  it('success never escalates, whatever the count', () => {
    expect(decideEscalation({ ...base, status: 'ok', retryCount: 99 }).escalate).toBe(false);
  });

  it('outcomes no retry can fix escalate at once, on the first attempt', () => {
    expect(decideEscalation({ ...base, status: 'model_not_found' })).toEqual({ escalate: true, reason: 'model_not_found' });
    expect(decideEscalation({ ...base, status: 'ollama_unreachable' })).toEqual({ escalate: true, reason: 'ollama_unreachable' });
    expect(decideEscalation({ ...base, status: 'signin_required' })).toEqual({ escalate: true, reason: 'signin_required' });
    expect(decideEscalation({ ...base, status: 'cli_not_found' })).toEqual({ escalate: true, reason: 'cli_not_found' });
    expect(decideEscalation({ ...base, status: 'circuit_open' })).toEqual({ escalate: true, reason: 'circuit_open' });
  });

  it('cloud access denied escalates at once; the temporary cloud and registry failures do not', () => {
    expect(decideEscalation({ ...base, status: 'cloud_access_denied' })).toEqual({
      escalate: true,
      reason: 'cloud_access_denied',
    });
    for (const status of ['rate_limited', 'pull_failed', 'server_busy', 'spawn_failed'] as const) {
      expect(decideEscalation({ ...base, status }), status).toEqual({ escalate: false, reason: null });
      // ... but they spend the task's budget like any failure
      expect(decideEscalation({ ...base, status, retryCount: 3 }).reason, status).toBe('max_retries_exceeded');
      expect(OUTCOME_POLICY[status]).toMatchObject({ retryable: true, breaker: 'neutral', countsAsTaskFailure: true });
    }
  });

  it("the caller's input and the wrong kind of model are not retryable as is and never touch the circuit", () => {
    for (const status of ['prompt_too_long', 'model_unsupported', 'input_file_error'] as const) {
      expect(OUTCOME_POLICY[status], status).toMatchObject({ retryable: false, breaker: 'neutral', escalateAtOnce: null });
      expect(decideEscalation({ ...base, status }).escalate, status).toBe(false);
      expect(decideEscalation({ ...base, status, retryCount: 3 }).reason, status).toBe('max_retries_exceeded');
    }
  });

  it('a failure that opened the circuit escalates with circuit_open unless retries ran out first', () => {
    expect(decideEscalation({ ...base, status: 'timeout', openedCircuit: true })).toEqual({
      escalate: true,
      reason: 'circuit_open',
    });
    expect(decideEscalation({ ...base, status: 'timeout', retryCount: 3, openedCircuit: true }).reason).toBe(
      'max_retries_exceeded',
    );
  });

  it('cancelled and invalid input never escalate (the caller chose them)', () => {
    for (const status of ['cancelled', 'invalid_input', 'unsupported_option'] as const) {
      expect(decideEscalation({ ...base, status, retryCount: 10 }).escalate).toBe(false);
    }
  });

  it('the policy table covers every status, and only ok is ok', () => {
    for (const status of RUN_STATUSES) {
      expect(OUTCOME_POLICY[status], status).toBeDefined();
      expect(OUTCOME_POLICY[status].ok).toBe(status === 'ok');
    }
  });

  it("failures that are not the model's fault leave its circuit alone", () => {
    for (const status of ['ollama_unreachable', 'cancelled', 'invalid_input', 'server_busy', 'model_not_found'] as const) {
      expect(OUTCOME_POLICY[status].breaker, status).toBe('neutral');
    }
    for (const status of ['timeout', 'crashed', 'empty_output', 'output_limit'] as const) {
      expect(OUTCOME_POLICY[status].breaker, status).toBe('failure');
    }
  });
});
