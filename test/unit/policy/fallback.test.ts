import { describe, expect, it } from 'vitest';
import { fallsThrough, MIN_ATTEMPT_MS } from '../../../src/policy/fallback.js';
import { OUTCOME_POLICY } from '../../../src/policy/outcome-policy.js';
import { RUN_STATUSES, type RunStatus } from '../../../src/policy/run-status.js';

const at = (status: RunStatus, deadlineAt: number | null = null, now = 1_000) =>
  fallsThrough({ status, hasNext: true, now, deadlineAt });

describe('when a fallback chain moves on', () => {
  it('moves on from a model that cannot serve: circuit open, not installed, broken, useless answer', () => {
    for (const status of [
      'circuit_open',
      'model_not_found',
      'crashed',
      'empty_output',
      'model_unsupported',
      'output_limit',
    ] as const) {
      expect(at(status), status).toBe(true);
    }
  });

  it('moves on from a prompt over this model context window and from a cloud account refusal: another model may serve', () => {
    for (const status of ['prompt_too_long', 'rate_limited', 'signin_required', 'cloud_access_denied'] as const) {
      expect(at(status), status).toBe(true);
    }
  });

  it('never moves on when no other model could help, or the call is over', () => {
    const stops = [
      'ok',
      'ollama_unreachable',
      'server_busy',
      'cli_not_found',
      'spawn_failed',
      'cancelled',
      'blocked',
      'not_started',
      'invalid_input',
      'input_file_error',
    ] as const;
    for (const status of stops) expect(at(status, 1_000_000), status).toBe(false);
  });

  it('a timeout moves on only with a deadline that leaves time', () => {
    expect(at('timeout')).toBe(false);
    expect(at('timeout', 1_000 + MIN_ATTEMPT_MS)).toBe(true);
    expect(at('timeout', 1_000 + MIN_ATTEMPT_MS - 1)).toBe(false);
  });

  it('nothing moves on past the last model or past the deadline', () => {
    expect(fallsThrough({ status: 'crashed', hasNext: false, now: 0, deadlineAt: null })).toBe(false);
    expect(at('crashed', 1_050)).toBe(false);
    expect(at('circuit_open', 900)).toBe(false);
  });

  it('has a rule for every status, and never moves on from a success or from what only a human can fix about Ollama', () => {
    for (const status of RUN_STATUSES) {
      if (OUTCOME_POLICY[status].ok) expect(OUTCOME_POLICY[status].fallthrough).toBe('never');
    }
    expect(OUTCOME_POLICY.ollama_unreachable.fallthrough).toBe('never');
    expect(OUTCOME_POLICY.cli_not_found.fallthrough).toBe('never');
    // Another model on the same machine could not be started either.
    expect(OUTCOME_POLICY.spawn_failed.fallthrough).toBe('never');
  });
});
