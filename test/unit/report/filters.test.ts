import { describe, expect, it } from 'vitest';

import { isReportUsageError, parseSince, parseStatusFilter } from '../../../src/report/filters.js';

const NOW = new Date('2025-11-22T12:00:00.000Z');
const iso = (text: string) => parseSince(text, NOW).toISOString();

describe('parseSince', () => {
  it.each([
    ['30m', '2025-11-22T11:30:00.000Z'],
    ['24h', '2025-11-21T12:00:00.000Z'],
    ['7d', '2025-11-15T12:00:00.000Z'],
    ['45s', '2025-11-22T11:59:15.000Z'],
    ['2w', '2025-11-08T12:00:00.000Z'],
    [' 24h ', '2025-11-21T12:00:00.000Z'],
  ])('takes the duration %j back from now', (text, expected) => {
    expect(iso(text)).toBe(expected);
  });

  it.each([
    ['2025-11-22', '2025-11-22T00:00:00.000Z'],
    ['2025-11-22T10:00', '2025-11-22T10:00:00.000Z'],
    ['2025-11-22 10:00:30', '2025-11-22T10:00:30.000Z'],
    ['2025-11-22T10:00:00Z', '2025-11-22T10:00:00.000Z'],
    ['2025-11-22T10:00:00.5z', '2025-11-22T10:00:00.500Z'],
    ['2025-11-22T10:00:00.123456Z', '2025-11-22T10:00:00.123Z'],
    ['2025-11-22T10:00:00+01:00', '2025-11-22T09:00:00.000Z'],
    ['2025-11-22T10:00-0530', '2025-11-22T15:30:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
  ])('reads the ISO time %j (UTC without an offset)', (text, expected) => {
    expect(iso(text)).toBe(expected);
  });

  it.each(['', 'yesterday', '24', 'h', '-1h', '1.5h', '24H', '3mo', '1h30m', '22/11/2025', '2025-11-22T10', 'now'])(
    'refuses %j, saying what it expects',
    (text) => {
      let error: unknown;
      try {
        parseSince(text, NOW);
      } catch (caught) {
        error = caught;
      }
      expect(isReportUsageError(error)).toBe(true);
      expect((error as Error).message).toMatch(/^since: expected a duration .*30m, 24h, 7d.* ISO date .*2025-11-22.*; got ".*"$/);
      expect((error as Error).message).toContain(`got "${text}"`);
    },
  );

  it.each([
    ['0h', /more than 0/],
    ['2025-02-30', /not a real date/],
    ['2025-13-01', /not a real date/],
    ['2025-11-22T24:00', /not a real date/],
    ['2025-11-22T10:60', /not a real date/],
    ['2025-11-22T10:00+25:00', /impossible UTC offset/],
    ['99999999999d', /too far/],
  ])('refuses %j with a specific reason', (text, reason) => {
    expect(() => parseSince(text, NOW)).toThrow(reason);
  });
});

describe('parseStatusFilter', () => {
  it('takes one status or a comma-separated list, without duplicates', () => {
    expect(parseStatusFilter('timeout')).toEqual(['timeout']);
    expect(parseStatusFilter('timeout, crashed,timeout')).toEqual(['timeout', 'crashed']);
  });

  it('refuses unknown statuses, listing the known ones', () => {
    expect(() => parseStatusFilter('timeout,boom')).toThrow(
      /unknown status "boom"; expected one of ok, timeout, .*invalid_input/,
    );
    expect(() => parseStatusFilter(',')).toThrow(/expected one of/);
  });
});
