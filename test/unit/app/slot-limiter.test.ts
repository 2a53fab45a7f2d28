import { describe, expect, it } from 'vitest';
import { SlotAbortedError, SlotLimiter } from '../../../src/app/slot-limiter.js';

describe('SlotLimiter', () => {
  it('never lets more than the limit hold a slot, and serves waiters first-in first-out', async () => {
    const limiter = new SlotLimiter(2);
    const order: number[] = [];
    const requests = [0, 1, 2, 3, 4].map(() => limiter.request());
    requests.forEach((request, index) => void request.granted.then(() => order.push(index)));
    await Promise.resolve();
    expect(limiter.running).toBe(2);
    expect(limiter.waiting).toBe(3);
    expect(requests.map((r) => r.position())).toEqual([0, 0, 1, 2, 3]);

    (await requests[0]!.granted)();
    await requests[2]!.granted;
    expect(limiter.running).toBe(2);
    expect(requests[4]!.position()).toBe(2);
    (await requests[1]!.granted)();
    (await requests[2]!.granted)();
    await requests[4]!.granted;
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('an aborted waiter leaves the queue and never takes a slot', async () => {
    const limiter = new SlotLimiter(1);
    const holder = await limiter.request().granted;
    const controller = new AbortController();
    const waiting = limiter.request(controller.signal);
    const next = limiter.request();
    controller.abort();
    await expect(waiting.granted).rejects.toBeInstanceOf(SlotAbortedError);
    expect(limiter.waiting).toBe(1);
    expect(next.position()).toBe(1);
    holder();
    await next.granted;
    expect(limiter.running).toBe(1);
  });

  it('releasing twice frees only one slot', async () => {
    const limiter = new SlotLimiter(1);
    const release = await limiter.request().granted;
    release();
    release();
    expect(limiter.running).toBe(0);
  });

  it('refuses a limit below 1, quoting it', () => {
    expect(() => new SlotLimiter(0)).toThrow('got `0`');
  });
});
