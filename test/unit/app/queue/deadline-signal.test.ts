import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deadlineSignal } from '../../../../src/app/queue/deadline-signal.js';

const BUILT = path.resolve(__dirname, '../../../../dist/app/queue/deadline-signal.js');

describe('deadlineSignal', () => {
  it('aborts at the deadline even when garbage is collected while it waits (a queued call must not outlive its deadline_ms)', () => {
    // In a process of its own with --expose-gc: 20 waits with a caller's signal, each collected hard while it waits.
    const script = `
      const { deadlineSignal } = await import(${JSON.stringify(BUILT)});
      const caller = new AbortController();
      let fired = 0;
      const waits = [];
      for (let i = 0; i < 20; i++) {
        const { signal } = deadlineSignal(caller.signal, Date.now() + 150, Date.now());
        waits.push(new Promise((resolve) => { signal.addEventListener('abort', () => { fired++; resolve(); }); setTimeout(resolve, 1500); }));
      }
      for (let i = 0; i < 10; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 10)); }
      await Promise.all(waits);
      process.stdout.write(String(fired));
    `;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(Number(out)).toBe(20);
  });

  it("aborts with the caller's signal, and stops its timer once disposed", async () => {
    const caller = new AbortController();
    const { signal, dispose } = deadlineSignal(caller.signal, Date.now() + 60_000, Date.now());
    caller.abort(new Error('cancelled'));
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error).message).toBe('cancelled');
    dispose();
    const none = deadlineSignal(caller.signal, undefined, 0);
    expect(none.signal).toBe(caller.signal);
  });

  it('is aborted at once for a deadline already past', async () => {
    const { signal, dispose } = deadlineSignal(undefined, 0, 10);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(signal?.aborted).toBe(true);
    dispose();
  });
});
