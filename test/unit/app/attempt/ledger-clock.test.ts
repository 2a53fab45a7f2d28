import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AttemptLedger, type LedgerAttempt } from '../../../../src/app/attempt/ledger.js';
import { loadConfig } from '../../../../src/config/config.js';
import { StateStore } from '../../../../src/store/state/state-store.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An AttemptLedger whose wall clock a test steps forward and back, as NTP or a user can. */
function ledger(env: Record<string, string> = {}) {
  const dir = tempDir('ledger-clock-');
  dirs.push(dir);
  const config = loadConfig({ OLLAMA_MCP_TELEMETRY_DIR: dir, ...env });
  const store = new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} });
  let now = Date.UTC(2026, 10, 1);
  const l = new AttemptLedger({ store, clock: () => now, config, warn: () => {} });
  let n = 0;
  const attempt = (taskId?: string, extra: Partial<LedgerAttempt> = {}): LedgerAttempt =>
    ({
      runId: `run-${(n += 1)}`,
      modelKey: 'm:latest',
      request: { model: 'm', prompt: 'x', ...(taskId ? { taskId } : {}) },
      maxRetries: 2,
      timeoutMs: 1_000,
      startTimeoutMs: 0, // where the ledger counts a wait for the first byte in a probe's lease: none here
      breaker: { threshold: 2, cooldownMs: MINUTE },
      note: () => {},
      before: [],
      ...extra,
    }) as LedgerAttempt;
  const tasks = async () => Object.keys((await store.snapshot('all')).tasks).sort();
  return { l, store, attempt, tasks, step: (ms: number) => void (now += ms), now: () => now };
}

describe('the ledger when the wall clock steps', () => {
  it('a forward step past the TTL does not wipe the ledger at the next prune: escalated tasks keep their count', async () => {
    const s = ledger({ OLLAMA_MCP_TASK_TTL_DAYS: '30' });
    for (let i = 0; i < 3; i += 1) await s.l.settle(s.attempt('escalated'), 'crashed', null, false);
    for (const id of ['a', 'b', 'c']) await s.l.settle(s.attempt(id), 'ok', null, false);
    expect((await s.store.snapshot(['escalated'])).tasks.escalated).toMatchObject({ failures: 3, escalated: true });

    s.step(40 * DAY); // the clock jumps 40 days ahead (a bad RTC, a mistyped date)
    await s.l.settle(s.attempt('d'), 'ok', null, false); // the next prune is due at once
    expect(await s.tasks()).toEqual(['a', 'b', 'c', 'd', 'escalated']);

    // The clock is put right again: the task goes on counting from where it was.
    s.step(-40 * DAY);
    const next = await s.l.settle(s.attempt('escalated'), 'crashed', null, false);
    expect(next.retryCount).toBe(3);
    expect(next.escalation.escalate).toBe(true);
  });

  it('a backward step does not stop pruning for the size of the step', async () => {
    const s = ledger({ OLLAMA_MCP_TASK_TTL_DAYS: '1' });
    await s.l.settle(s.attempt('first'), 'ok', null, false); // prunes (nothing yet): the last prune is dated now
    s.step(-30 * DAY); // back a month: the last prune's date now lies a month ahead
    await s.l.settle(s.attempt('x'), 'ok', null, false);
    // Two days of runs, by the clock as it now runs: 'x' passes the 1-day TTL and is pruned.
    const others = { breaker: { threshold: 1_000, cooldownMs: MINUTE } };
    for (let hour = 0; hour < 50; hour += 1) {
      s.step(HOUR + MINUTE);
      await s.l.settle(s.attempt(undefined, others), 'crashed', null, false);
    }
    expect(await s.tasks()).toEqual(['first']);
  });

  it('a backward step never keeps an open circuit open longer than its cooldown', async () => {
    const s = ledger();
    await s.l.settle(s.attempt(), 'crashed', null, false);
    const opened = await s.l.settle(s.attempt(), 'crashed', null, false);
    expect(opened).toMatchObject({ transition: 'opened', circuit: { state: 'open', retry_after_seconds: 60 } });

    s.step(-DAY); // the clock is set back a day while the circuit is open
    const attempt = s.attempt('t');
    expect(await s.l.admit(attempt)).toMatchObject({ admitted: false, status: 'circuit_open' });
    const refused = await s.l.settleRefusal(attempt, false, 'circuit_open');
    expect(refused.circuit.retry_after_seconds).toBeLessThanOrEqual(60);

    s.step(MINUTE); // one cooldown later, by the clock as it now runs
    expect(await s.l.admit(s.attempt())).toMatchObject({ admitted: true, transition: 'half_opened' });
  });

  it("a backward step never makes a dead probe's lease outlast its length", async () => {
    const s = ledger();
    await s.l.settle(s.attempt(), 'crashed', null, false);
    await s.l.settle(s.attempt(), 'crashed', null, false);
    s.step(MINUTE);
    const probe = s.attempt(undefined, { timeoutMs: 10_000 });
    expect(await s.l.admit(probe)).toMatchObject({ admitted: true, transition: 'half_opened' });
    // The probe's server dies; the clock steps back a day. Other calls wait for the probe's verdict...
    s.step(-DAY);
    expect(await s.l.admit(s.attempt())).toMatchObject({ admitted: false, probeInFlight: true });
    // ... but no longer than the lease's own length (timeout + kill grace + 5 s) from when they first saw it.
    s.step(10_000 + 2_000 + 5_000);
    expect(await s.l.admit(s.attempt())).toMatchObject({ admitted: true });
  });

  it('a forward step at worst lets the probe through early, and only one', async () => {
    const s = ledger();
    await s.l.settle(s.attempt(), 'crashed', null, false);
    await s.l.settle(s.attempt(), 'crashed', null, false);
    s.step(DAY);
    expect(await s.l.admit(s.attempt())).toMatchObject({ admitted: true, transition: 'half_opened' });
    expect(await s.l.admit(s.attempt())).toMatchObject({ admitted: false, probeInFlight: true });
  });
});
