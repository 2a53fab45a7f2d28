import { describe, expect, it } from 'vitest';
import { limitWarnings } from '../../../src/store/state/redis-warning-limiter.js';

describe('limitWarnings', () => {
  it('lets one warning a window through and says how many it held back', () => {
    let now = 0;
    const lines: string[] = [];
    const warn = limitWarnings((message) => lines.push(message), { windowMs: 60_000, clock: () => now });
    for (let i = 0; i < 100; i += 1) {
      warn(`ledger not updated for run r${i}`);
      now += 100; // a storm: 100 runs in 10 s
    }
    expect(lines).toEqual(['ledger not updated for run r0']);
    now = 61_000;
    warn('ledger not updated for run late');
    expect(lines[1]).toBe('ledger not updated for run late (99 more such warnings in the last 61 s not shown)');
    now = 200_000;
    warn('again');
    expect(lines[2]).toBe('again');
  });
});
