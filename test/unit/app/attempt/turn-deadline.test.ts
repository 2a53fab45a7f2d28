import { describe, expect, it } from 'vitest';
import { TurnScheduler, type WaitingAttempt } from '../../../../src/app/attempt/turn.js';
import type { AttemptLedger } from '../../../../src/app/attempt/ledger.js';
import type { TurnSlots } from '../../../../src/app/queue/turn-slots.js';

/** A queue that never grants a turn: a request ends only when its signal aborts. */
const fullQueue = {
  request: (_request: unknown, signal: AbortSignal | undefined) => ({
    granted: new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
    reason: () => null,
  }),
} as unknown as TurnSlots;

const admitting = { admit: async () => ({ admitted: true, transition: null }) } as unknown as AttemptLedger;
const attempt = { dispatch: {} } as unknown as WaitingAttempt;

function takeTurn(clock: () => number, deadlineAt: number, signal?: AbortSignal) {
  const scheduler = new TurnScheduler({ ledger: admitting, slots: fullQueue, clock });
  return scheduler.takeTurn(attempt, { signal, deadlineAt, inBatch: false, emit: () => {} });
}

describe('a queued attempt whose call has a deadline', () => {
  it('ends not_started when the deadline fires, even if the clock has not quite reached it (timers fire up to 1 ms early)', async () => {
    const frozen = Date.now();
    const turn = await takeTurn(() => frozen, frozen + 20);
    expect(turn).toMatchObject({ kind: 'stopped', status: 'not_started' });
  });

  it('ends cancelled when its caller cancels before the deadline', async () => {
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error('cancelled')), 10);
    const turn = await takeTurn(Date.now, Date.now() + 60_000, caller.signal);
    expect(turn).toMatchObject({ kind: 'stopped', status: 'cancelled' });
  });
});
