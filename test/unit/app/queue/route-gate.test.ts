import { describe, expect, it } from 'vitest';
import { RouteGate } from '../../../../src/app/queue/route-gate.js';

const settled = async <T>(promise: Promise<T>): Promise<boolean> => {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('the limits over all hosts together', () => {
  it("lets in at most the server's limit, in arrival order; a place given back lets the next in", async () => {
    const gate = new RouteGate(2);
    const [a, b, c] = [gate.enter(undefined, undefined), gate.enter(undefined, undefined), gate.enter(undefined, undefined)];
    expect(await settled(a.entered)).toBe(true);
    expect(await settled(b.entered)).toBe(true);
    expect(await settled(c.entered)).toBe(false);
    expect(c.reason()).toEqual({ kind: 'concurrency', ahead: 0 });
    const leave = await a.entered;
    leave();
    leave(); // twice: harmless
    expect(await settled(c.entered)).toBe(true);
    const d = gate.enter(undefined, undefined);
    expect(await settled(d.entered)).toBe(false);
  });

  it("keeps a batch's own limit, and lets another call by a job held back only by its batch", async () => {
    const gate = new RouteGate(5);
    const batch = { id: 'b', limit: 2 };
    const jobs = [0, 1, 2].map(() => gate.enter(batch, undefined));
    const other = gate.enter(undefined, undefined);
    expect(await Promise.all(jobs.map((j) => settled(j.entered)))).toEqual([true, true, false]);
    expect(jobs[2]!.reason()).toEqual({ kind: 'batch' });
    expect(await settled(other.entered)).toBe(true);
    (await jobs[0]!.entered)();
    expect(await settled(jobs[2]!.entered)).toBe(true);
  });

  it('a call aborted while it waits leaves the line', async () => {
    const gate = new RouteGate(1);
    const first = gate.enter(undefined, undefined);
    const controller = new AbortController();
    const gone = gate.enter(undefined, controller.signal);
    const next = gate.enter(undefined, undefined);
    controller.abort();
    await expect(gone.entered).rejects.toThrow(/aborted/);
    (await first.entered)();
    expect(await settled(next.entered)).toBe(true);
  });
});
