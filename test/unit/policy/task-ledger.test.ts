import { describe, expect, it } from 'vitest';
import { pruneTasks, recordAttempt, retryCountFor, type TaskLedgerEntry } from '../../../src/policy/task-ledger.js';

const attempt = (entry: TaskLedgerEntry | undefined, status: Parameters<typeof recordAttempt>[1]['status'], now = 1_000) =>
  recordAttempt(entry, {
    status,
    retryCount: retryCountFor(entry, undefined),
    runId: `r${now}`,
    model: 'm',
    escalationReason: null,
    now,
  });

describe('task ledger', () => {
  it('the first attempt has retry_count 0 and each failure adds one', () => {
    expect(retryCountFor(undefined, undefined)).toBe(0);
    let entry = attempt(undefined, 'timeout');
    expect(retryCountFor(entry, undefined)).toBe(1);
    entry = attempt(entry, 'crashed');
    expect(retryCountFor(entry, undefined)).toBe(2);
    expect(entry).toMatchObject({ attempts: 2, failures: 2, totalFailures: 2, lastStatus: 'crashed' });
  });

  it("the caller's retry_count wins when it is larger", () => {
    const entry = attempt(undefined, 'timeout');
    expect(retryCountFor(entry, 5)).toBe(5);
    expect(retryCountFor(entry, 0)).toBe(1);
  });

  it('a success clears the streak but keeps the history', () => {
    let entry = attempt(attempt(undefined, 'timeout'), 'timeout');
    entry = attempt(entry, 'ok');
    expect(entry).toMatchObject({ attempts: 3, failures: 0, totalFailures: 2, lastStatus: 'ok' });
  });

  it('cancelled and circuit-open attempts are recorded but are not failures', () => {
    let entry = attempt(undefined, 'timeout');
    entry = attempt(entry, 'cancelled');
    entry = attempt(entry, 'circuit_open');
    expect(entry).toMatchObject({ attempts: 3, failures: 1, totalFailures: 1 });
  });

  it('prunes entries older than the TTL and keeps at most maxEntries, newest first', () => {
    const tasks: Record<string, TaskLedgerEntry> = {};
    for (let i = 0; i < 10; i += 1) tasks[`t${i}`] = attempt(undefined, 'ok', i * 100);
    expect(pruneTasks(tasks, 1_000, { maxAgeMs: 10_000, maxEntries: 100 })).toBe(tasks); // nothing to do: same object
    const aged = pruneTasks(tasks, 1_000, { maxAgeMs: 450, maxEntries: 100 });
    expect(Object.keys(aged).sort()).toEqual(['t6', 't7', 't8', 't9']);
    const capped = pruneTasks(tasks, 1_000, { maxAgeMs: 10_000, maxEntries: 3 });
    expect(Object.keys(capped).sort()).toEqual(['t7', 't8', 't9']);
  });
});
