import { describe, expect, it } from 'vitest';
import type { TaskLedgerEntry } from '../../../../src/policy/task-ledger.js';
import { unsavedVerdict } from '../../../../src/app/reply/run-warnings.js';

const twoFailures: TaskLedgerEntry = {
  attempts: 2,
  failures: 2,
  totalFailures: 2,
  lastStatus: 'crashed',
  lastRunId: 'r2',
  lastModel: 'm',
  escalated: false,
  escalationReason: null,
  firstSeenAt: 1,
  updatedAt: 2,
  recent: [],
};

describe('unsavedVerdict', () => {
  it('counts from the readable ledger and says the count is frozen', () => {
    const verdict = unsavedVerdict({
      ledger: { entry: twoFailures },
      taskId: 't',
      escalation: { escalate: true, reason: 'max_retries_exceeded' },
      callerRetryCount: undefined,
      error: 'EROFS',
    });
    expect(verdict.retryCount).toBe(2);
    expect(verdict.escalation).toEqual({ escalate: true, reason: 'max_retries_exceeded' });
    expect(verdict.warning.kind).toBe('ledger_not_updated');
    expect(verdict.warning.message).toContain('EROFS');
  });

  it("falls back to the caller's retry_count when the ledger cannot be read, and says so", () => {
    const verdict = unsavedVerdict({
      ledger: 'unreadable',
      taskId: 't',
      escalation: { escalate: false, reason: null },
      callerRetryCount: 1,
      error: 'EACCES',
    });
    expect(verdict.retryCount).toBe(1);
    expect(verdict.escalation.escalate).toBe(false);
    expect(verdict.warning.kind).toBe('ledger_unreadable');
  });
});
