import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';

// Imports only node: builtins: the multi-process rotation test runs src/telemetry/ alone in plain `node`.

/** The time retention judges ages by (epoch ms), kept in a file every server process, and the next one, starts from. */
export interface RetentionClock {
  /** Ages are judged as of this time. */
  readonly asOf: number;
  /** The wall clock when `asOf` last moved. */
  readonly movedAt: number;
}

/** The furthest a forward step of the wall clock moves the retention clock at once: a day, as the ledger's prune clock. */
export const RETENTION_MAX_STEP_MS = 24 * 60 * 60 * 1000;
/** While it catches up with a wall clock that stepped further, it moves one step an hour. */
const RETENTION_STEP_EVERY_MS = 60 * 60 * 1000;

/**
 * The retention clock after a look at the wall clock `now` (pure): it follows the wall clock, backwards
 * too, while `now` is at most a step ahead; past that it moves a step at a time, so a jump of 100 days
 * ages files by a day at once, not by 100. Without a previous clock it starts at `now`.
 */
export function nextRetentionClock(previous: RetentionClock | null, now: number): RetentionClock {
  if (previous === null || now <= previous.asOf + RETENTION_MAX_STEP_MS) return { asOf: now, movedAt: now };
  // A last move dated ahead of the wall clock (it stepped back meanwhile) does not hold the next one back.
  const due = now - previous.movedAt >= RETENTION_STEP_EVERY_MS || previous.movedAt > now;
  return due ? { asOf: previous.asOf + RETENTION_MAX_STEP_MS, movedAt: now } : previous;
}

/** Name of the clock's file in the telemetry dir. */
export const RETENTION_CLOCK_FILE_NAME = 'retention-clock.json';

/** Every write has this length, so two processes writing at once leave one whole clock, never a mix. */
const LINE_LENGTH = 80;

/**
 * The retention clock in its file, read and moved without a lock: each process moves it at most one
 * step past what it read. A missing or unreadable file starts a new clock at `now`; one that cannot
 * be written is used anyway (retention is best effort, and the next prune tries again).
 */
export class RetentionClockFile {
  readonly #file: string;

  constructor(file: string) {
    this.#file = file;
  }

  /** Moves the clock for the wall clock `now` (epoch ms) and returns the time to judge ages by. */
  async tick(now: number): Promise<number> {
    const previous = await this.read();
    const next = nextRetentionClock(previous, now);
    if (next !== previous) await this.#write(next).catch(() => {});
    return next.asOf;
  }

  /** The clock as last written, or null when there is none (or it cannot be read). */
  async read(): Promise<RetentionClock | null> {
    return parseClock(await readFile(this.#file, 'utf8').catch(() => ''));
  }

  /** One write of a fixed length at the start of the file, never truncated first: a reader sees the old clock or the new one, never an empty file. */
  async #write(clock: RetentionClock): Promise<void> {
    const json = JSON.stringify({ as_of: clock.asOf, moved_at: clock.movedAt });
    const line = Buffer.from(`${json.padEnd(LINE_LENGTH - 1)}\n`, 'utf8');
    const handle = await open(this.#file, constants.O_WRONLY | constants.O_CREAT, 0o600);
    try {
      await handle.write(line, 0, line.length, 0);
      await handle.truncate(line.length); // a longer file (edited by hand) would not parse
    } finally {
      await handle.close();
    }
  }
}

function parseClock(text: string): RetentionClock | null {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return null;
    const { as_of: asOf, moved_at: movedAt } = value as Record<string, unknown>;
    if (!Number.isSafeInteger(asOf) || !Number.isSafeInteger(movedAt)) return null;
    return { asOf: asOf as number, movedAt: movedAt as number };
  } catch {
    return null;
  }
}
