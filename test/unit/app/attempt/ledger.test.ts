import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AttemptLedger, type LedgerAttempt } from '../../../../src/app/attempt/ledger.js';
import { loadConfig } from '../../../../src/config/config.js';
import type { RunWarning } from '../../../../src/app/reply/run-result.js';
import { StateStore } from '../../../../src/store/state/state-store.js';
import { StateStoreError } from '../../../../src/store/state/state-store-error.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** An AttemptLedger on a temp state dir with an injected clock. */
function ledger(env: Record<string, string> = {}) {
  const dir = tempDir('attempt-ledger-');
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir, ...env });
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  let now = Date.UTC(2026, 10, 1);
  const warnings: string[] = [];
  const l = new AttemptLedger({ store, clock: () => now, config, warn: (m) => warnings.push(m) });
  let n = 0;
  const attempt = (taskId?: string, extra: Partial<LedgerAttempt> = {}) => {
    const notes: RunWarning[] = [];
    n += 1;
    const a: LedgerAttempt = {
      runId: `run-${n}`,
      modelKey: 'm:latest',
      request: { model: 'm', prompt: 'x', ...(taskId ? { taskId } : {}) },
      maxRetries: 2,
      timeoutMs: 1_000,
      startTimeoutMs: 2_000,
      breaker: { threshold: 10, cooldownMs: 60_000 },
      note: (w) => notes.push(w),
      before: [],
      ...extra,
    };
    return { a, notes };
  };
  return { l, store, warnings, attempt, advance: (ms: number) => void (now += ms) };
}

describe('AttemptLedger', () => {
  it('counts a task’s failures and escalates once they pass max_retries', async () => {
    const s = ledger();
    const verdicts = [];
    for (let i = 0; i < 3; i += 1) verdicts.push(await s.l.settle(s.attempt('t').a, 'crashed', null, false));
    expect(verdicts.map((v) => v.retryCount)).toEqual([0, 1, 2]);
    expect(verdicts.map((v) => v.escalation.escalate)).toEqual([false, false, true]);
    expect((await s.store.snapshot(['t'])).tasks.t).toMatchObject({ failures: 3, escalated: true });
  });

  it('opens the circuit at the threshold, then refuses and records the refusal for the task', async () => {
    const s = ledger();
    const breaker = { threshold: 2, cooldownMs: 60_000 };
    await s.l.settle(s.attempt(undefined, { breaker }).a, 'crashed', null, false);
    const second = await s.l.settle(s.attempt(undefined, { breaker }).a, 'crashed', null, false);
    expect(second).toMatchObject({ transition: 'opened', circuit: { state: 'open', retry_after_seconds: 60 } });
    const refused = s.attempt('t', { breaker }).a;
    expect(await s.l.admit(refused)).toMatchObject({ admitted: false, status: 'circuit_open' });
    expect((await s.store.snapshot(['t'])).tasks.t).toBeUndefined(); // recorded when the attempt ends
    const settled = await s.l.settleRefusal(refused, false, 'circuit_open');
    expect(settled).toMatchObject({ escalation: { escalate: true, reason: 'circuit_open' } });
    expect((await s.store.snapshot(['t'])).tasks.t).toMatchObject({ lastStatus: 'circuit_open' });
    s.advance(60_000);
    expect(await s.l.admit(s.attempt(undefined, { breaker }).a)).toMatchObject({ admitted: true });
  });

  it('in block mode refuses a task that escalated, until it is reset', async () => {
    const s = ledger({ OLLAMA_MCP_ESCALATION: 'block' });
    for (let i = 0; i < 3; i += 1) await s.l.settle(s.attempt('t', { maxRetries: 2 }).a, 'crashed', null, false);
    const refusal = await s.l.admit(s.attempt('t').a);
    expect(refusal).toMatchObject({ admitted: false, status: 'blocked', error: expect.stringMatching(/ollama_reset/) });
    expect(await s.l.admit(s.attempt('other').a)).toMatchObject({ admitted: true });
  });

  it('prunes entries older than the TTL, at most once an hour', async () => {
    const s = ledger({ OLLAMA_MCP_TASK_TTL_DAYS: '1' });
    await s.l.settle(s.attempt('old').a, 'ok', null, false);
    s.advance(DAY - 10 * 60_000);
    await s.l.settle(s.attempt('b').a, 'ok', null, false); // prunes: 'old' is not yet a day old
    s.advance(20 * 60_000);
    await s.l.settle(s.attempt('c').a, 'ok', null, false); // 'old' is now past the TTL, but the last prune was 20 min ago
    expect(Object.keys((await s.store.snapshot('all')).tasks).sort()).toEqual(['b', 'c', 'old']);
    s.advance(HOUR);
    await s.l.settle(s.attempt('d').a, 'ok', null, false);
    expect(Object.keys((await s.store.snapshot('all')).tasks).sort()).toEqual(['b', 'c', 'd']);
  });

  it('when the state can be neither written nor read, keeps the caller’s retry_count and says so', async () => {
    const s = ledger();
    const broken = new StateStoreError('cannot lock state.json: EROFS: read-only file system', { step: 'lock' });
    s.store.transact = () => Promise.reject(broken);
    s.store.snapshot = () => Promise.reject(broken);
    const { a, notes } = s.attempt('t', { request: { model: 'm', prompt: 'x', taskId: 't', retryCount: 1 } });
    expect(await s.l.admit(a)).toMatchObject({ admitted: true });
    const settled = await s.l.settle(a, 'crashed', null, false);
    expect(settled).toMatchObject({ retryCount: 1, escalation: { escalate: false }, circuit: { state: 'closed' } });
    expect(notes.map((w) => w.kind)).toEqual(['circuit_not_updated', 'ledger_unreadable']);
    expect(s.warnings.some((w) => /ledger not readable either/.test(w))).toBe(true);
  });

  it('an attempt the call goes on from (busy retry, next model of a chain) updates the circuit, not the task', async () => {
    const s = ledger();
    const breaker = { threshold: 2, cooldownMs: 60_000 };
    await s.l.settle(s.attempt('t').a, 'crashed', null, false); // the task's one failed call so far
    const step = await s.l.settle(s.attempt('t', { breaker }).a, 'crashed', null, true);
    expect(step).toMatchObject({ retryCount: 1, circuit: { consecutive_failures: 2, state: 'open' } });
    const skippedAttempt = s.attempt('t', { breaker }).a;
    expect(await s.l.admit(skippedAttempt)).toMatchObject({ admitted: false, status: 'circuit_open' });
    expect(await s.l.settleRefusal(skippedAttempt, true, 'circuit_open')).toMatchObject({ retryCount: 1 });
    expect((await s.store.snapshot(['t'])).tasks.t).toMatchObject({ attempts: 1, failures: 1, escalated: false });
  });

  it('an excused start_timeout (the server guessed a fit wrong) is recorded for the task but not counted, even at max_retries', async () => {
    const s = ledger();
    await s.l.settle(s.attempt('t').a, 'start_timeout', null, false);
    await s.l.settle(s.attempt('t').a, 'start_timeout', null, false); // two counted: retry_count 2 = max_retries
    const excused = await s.l.settle(s.attempt('t').a, 'start_timeout', null, false, true);
    expect(excused).toMatchObject({ retryCount: 2, escalation: { escalate: false, reason: null }, excused: true });
    expect((await s.store.snapshot(['t'])).tasks.t).toMatchObject({
      attempts: 3,
      failures: 2,
      lastStatus: 'start_timeout',
      escalated: false,
    });
    // Without the excuse the same attempt is the third failure: it escalates.
    const counted = await s.l.settle(s.attempt('t').a, 'start_timeout', null, false);
    expect(counted).toMatchObject({ retryCount: 2, escalation: { escalate: true, reason: 'max_retries_exceeded' } });
  });

  it('an excused failure does not escalate when the ledger cannot be written either', async () => {
    const s = ledger();
    const broken = new StateStoreError('cannot lock state.json: EROFS: read-only file system', { step: 'lock' });
    s.store.transact = () => Promise.reject(broken);
    const { a } = s.attempt('t', { request: { model: 'm', prompt: 'x', taskId: 't', retryCount: 2 } });
    expect(await s.l.settle(a, 'start_timeout', null, false, true)).toMatchObject({ escalation: { escalate: false } });
    expect(await s.l.settle(a, 'start_timeout', null, false)).toMatchObject({ escalation: { escalate: true } });
  });
});
