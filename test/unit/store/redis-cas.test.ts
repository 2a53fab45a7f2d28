import { describe, expect, it } from 'vitest';
import { casArguments, conflictBackoffMs, KEEP, redisKeys } from '../../../src/store/state/redis-cas.js';

describe('redis keys and compare-and-set arguments', () => {
  it('names every key under the prefix, and escapes the prefix in the SCAN pattern', () => {
    const keys = redisKeys('team[a]*:');
    expect(keys.circuits).toBe('team[a]*:circuits');
    expect(keys.task('fix-42')).toBe('team[a]*:task:fix-42');
    expect(keys.taskIdOf(keys.task('fix:42'))).toBe('fix:42');
    expect(keys.taskPattern).toBe('team\\[a\\]\\*:task:*');
  });

  it('lays out numkeys, keys, values read, writes and the TTL of each key (0: none)', () => {
    expect(casArguments(['c', 't'], ['', '{"a":1}'], [KEEP, ''], [0, 1_000.4])).toEqual([
      '2',
      'c',
      't',
      '',
      '{"a":1}',
      '=',
      '',
      '0',
      '1000',
    ]);
  });

  it('pauses longer after repeated conflicts, never more than ~50 ms, and spreads the contenders', () => {
    expect(conflictBackoffMs(1, 0)).toBeLessThan(1);
    expect(conflictBackoffMs(1, 1)).toBeLessThan(conflictBackoffMs(4, 1));
    expect(conflictBackoffMs(50, 1)).toBeLessThanOrEqual(50.5);
    expect(conflictBackoffMs(3, 0.1)).not.toBe(conflictBackoffMs(3, 0.9));
  });
});
