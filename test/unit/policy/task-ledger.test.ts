import { describe, expect, it } from 'vitest';
import {
  NEVER_PRUNE,
  pruneClock,
  pruneDue,
  pruneTasks,
  RECENT_RUNS,
  recordAttempt,
  recordedRun,
  retryCountFor,
  type TaskLedgerEntry,
} from '../../../src/policy/task-ledger.js';

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
  it('an escalation is kept by every later attempt but a success (a reset removes the entry)', () => {
    const escalated = recordAttempt(undefined, {
      status: 'model_not_found',
      retryCount: 0,
      runId: 'r0',
      model: 'm',
      escalationReason: 'model_not_found',
      now: 1,
    });
    for (const status of ['cancelled', 'not_started', 'unsupported_option', 'crashed', 'blocked'] as const) {
      expect(attempt(escalated, status), status).toMatchObject({ escalated: true, escalationReason: 'model_not_found' });
    }
    expect(attempt(escalated, 'ok')).toMatchObject({ escalated: false, escalationReason: null, failures: 0 });
  });

  it('remembers the last attempts by id with the verdict each was recorded with', () => {
    let entry: TaskLedgerEntry | undefined;
    for (let now = 1; now <= RECENT_RUNS + 2; now += 1) entry = attempt(entry, now % 2 === 0 ? 'ok' : 'crashed', now);
    expect(entry!.recent).toHaveLength(RECENT_RUNS);
    expect(recordedRun(entry, 'r1')).toBeUndefined();
    expect(recordedRun(entry, `r${RECENT_RUNS + 1}`)).toEqual({ runId: `r${RECENT_RUNS + 1}`, status: 'crashed', retryCount: 0 });
    expect(recordedRun(entry, `r${RECENT_RUNS + 2}`)?.status).toBe('ok');
  });

  it('a call whose earlier model stands for it is recorded under that model, and remembered by the id that ended it', () => {
    const entry = recordAttempt(undefined, {
      status: 'not_started',
      counted: true,
      retryCount: 0,
      runId: 'fallback-run',
      model: 'fallback',
      escalationReason: null,
      now: 1,
      standing: { status: 'crashed', runId: 'primary-run', model: 'primary' },
    });
    expect(entry).toMatchObject({ failures: 1, lastStatus: 'crashed', lastModel: 'primary', lastRunId: 'primary-run' });
    expect(recordedRun(entry, 'fallback-run')).toEqual({ runId: 'fallback-run', status: 'not_started', retryCount: 0 });
  });

  it('an attempt that does not count (an excused failure) is recorded as the last attempt without adding to the streak', () => {
    const entry = attempt(undefined, 'timeout');
    const excused = recordAttempt(entry, {
      status: 'start_timeout',
      retryCount: 1,
      runId: 'r2',
      model: 'm',
      escalationReason: null,
      now: 2_000,
      counted: false,
    });
    expect(excused).toMatchObject({ attempts: 2, failures: 1, totalFailures: 1, lastStatus: 'start_timeout', lastRunId: 'r2' });
  });

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

describe('pruning', () => {
  const DAY = 86_400_000;
  const escalated = (updatedAt: number): TaskLedgerEntry => ({
    ...attempt(undefined, 'crashed', updatedAt),
    escalated: true,
    escalationReason: 'max_retries_exceeded',
  });

  it('keeps an escalated task four times the TTL', () => {
    const now = 200 * DAY;
    const tasks: Record<string, TaskLedgerEntry> = {
      plain: attempt(undefined, 'ok', now - 40 * DAY),
      escalated: escalated(now - 40 * DAY),
      ancient: escalated(now - 130 * DAY),
    };
    expect(Object.keys(pruneTasks(tasks, now, { maxAgeMs: 30 * DAY, maxEntries: 100 }))).toEqual(['escalated']);
  });

  it('the count cap drops the oldest tasks that did not escalate first', () => {
    const tasks: Record<string, TaskLedgerEntry> = {
      esc: escalated(1),
      a: attempt(undefined, 'ok', 2),
      b: attempt(undefined, 'ok', 3),
      c: attempt(undefined, 'ok', 4),
    };
    expect(Object.keys(pruneTasks(tasks, 10, { maxAgeMs: DAY, maxEntries: 2 })).sort()).toEqual(['c', 'esc']);
    expect(
      Object.keys(
        pruneTasks({ e1: escalated(1), e2: escalated(2), a: attempt(undefined, 'ok', 3) }, 10, { maxAgeMs: DAY, maxEntries: 1 }),
      ),
    ).toEqual(['e2']);
  });

  it('is due hourly, and at once when the last prune is dated ahead of the clock (it stepped back); never for a self-pruning ledger', () => {
    const HOUR = 3_600_000;
    expect(pruneDue(0, HOUR)).toBe(true);
    expect(pruneDue(10 * HOUR, 10 * HOUR + HOUR - 1)).toBe(false);
    expect(pruneDue(10 * HOUR, 11 * HOUR)).toBe(true);
    expect(pruneDue(10 * HOUR + 1, 10 * HOUR)).toBe(true);
    expect(pruneDue(NEVER_PRUNE, 10 * HOUR)).toBe(false);
  });

  it('judges ages by a clock at most a day past the previous prune, however far the wall clock jumped', () => {
    expect(pruneClock(0, 50 * DAY)).toBe(50 * DAY); // no previous prune
    expect(pruneClock(10 * DAY, 10 * DAY + 3_600_000)).toBe(10 * DAY + 3_600_000);
    expect(pruneClock(10 * DAY, 50 * DAY)).toBe(11 * DAY);
    expect(pruneClock(10 * DAY, 2 * DAY)).toBe(2 * DAY); // stepped back: ages by the clock as it is
  });
});
