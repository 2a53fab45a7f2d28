import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  nextRetentionClock,
  RETENTION_MAX_STEP_MS,
  RetentionClockFile,
  type RetentionClock,
} from '../../../src/telemetry/retention-clock.js';
import { tempDir } from '../../helpers/temp-dir.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 5, 1);

/** The clock after looking at the wall clock at each of `times` in turn. */
function walk(start: RetentionClock | null, times: readonly number[]): RetentionClock {
  let clock = start;
  for (const now of times) clock = nextRetentionClock(clock, now);
  return clock!;
}

describe('nextRetentionClock: the time retention judges ages by', () => {
  it('starts at the wall clock, and follows it while it moves less than a day between looks', () => {
    expect(nextRetentionClock(null, T0)).toEqual({ asOf: T0, movedAt: T0 });
    expect(walk(null, [T0, T0 + HOUR, T0 + 20 * HOUR, T0 + 43 * HOUR]).asOf).toBe(T0 + 43 * HOUR);
  });

  it('after a forward step of 100 days: one day at once, then one day an hour, until it has caught up', () => {
    const start = nextRetentionClock(null, T0);
    const stepped = T0 + 100 * DAY;
    expect(nextRetentionClock(start, stepped).asOf).toBe(T0 + DAY);
    // Many looks within the hour move it no further.
    const looks = Array.from({ length: 50 }, (_, i) => stepped + i * 60_000);
    expect(walk(start, looks).asOf).toBe(T0 + DAY);
    // One more day an hour after that.
    expect(walk(start, [...looks, stepped + HOUR]).asOf).toBe(T0 + 2 * DAY);
    // Caught up after about 100 hours (the wall clock moved on meanwhile), then it follows the wall clock again.
    const hours = (n: number) => Array.from({ length: n + 1 }, (_, i) => stepped + i * HOUR);
    expect(walk(start, hours(100)).asOf).toBe(T0 + 101 * DAY);
    expect(walk(start, hours(104)).asOf).toBe(stepped + 104 * HOUR);
  });

  it('after a backward step: follows the wall clock back at once, so retention never waits for the clock to catch up', () => {
    const ahead = walk(null, [T0 + 30 * DAY]);
    expect(nextRetentionClock(ahead, T0)).toEqual({ asOf: T0, movedAt: T0 });
  });

  it('a last move dated ahead of the wall clock (it stepped back while catching up) does not hold the next move back', () => {
    const catchingUp: RetentionClock = { asOf: T0, movedAt: T0 + 50 * DAY };
    expect(nextRetentionClock(catchingUp, T0 + 10 * DAY).asOf).toBe(T0 + RETENTION_MAX_STEP_MS);
  });
});

describe('RetentionClockFile: the clock every process shares', () => {
  it('is kept in its file, so a new process continues from it rather than from its own now', async () => {
    const file = join(tempDir('retention-clock-'), 'retention-clock.json');
    expect(await new RetentionClockFile(file).tick(T0)).toBe(T0);
    expect(await new RetentionClockFile(file).tick(T0 + 100 * DAY)).toBe(T0 + DAY);
    expect(await new RetentionClockFile(file).tick(T0 + 100 * DAY + 5 * 60_000)).toBe(T0 + DAY);
    expect(await new RetentionClockFile(file).read()).toEqual({ asOf: T0 + DAY, movedAt: T0 + 100 * DAY });
  });

  it('processes moving it at once move it one step, not one each', async () => {
    const file = join(tempDir('retention-clock-'), 'retention-clock.json');
    await new RetentionClockFile(file).tick(T0);
    const seen = await Promise.all(Array.from({ length: 8 }, () => new RetentionClockFile(file).tick(T0 + 100 * DAY)));
    expect(new Set(seen)).toEqual(new Set([T0 + DAY]));
  });

  it('a missing, garbled or hand-lengthened file starts a new clock at now and is written whole again', async () => {
    const dir = tempDir('retention-clock-');
    const file = join(dir, 'retention-clock.json');
    await writeFile(file, '{"as_of": 17');
    expect(await new RetentionClockFile(file).tick(T0)).toBe(T0);
    expect(await new RetentionClockFile(file).read()).toEqual({ asOf: T0, movedAt: T0 });
    await writeFile(file, `${JSON.stringify({ as_of: T0, moved_at: T0 })}\n${' '.repeat(200)}trailing`);
    await new RetentionClockFile(file).tick(T0 + HOUR);
    expect((await readFile(file, 'utf8')).trim()).toBe(JSON.stringify({ as_of: T0 + HOUR, moved_at: T0 + HOUR }));
    expect(await new RetentionClockFile(join(dir, 'missing', 'clock.json')).tick(T0)).toBe(T0); // cannot be written: used anyway
  });
});
