import { readdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

// Imports only node: builtins: the multi-process rotation test runs src/telemetry/ alone in plain `node`.

/*
 * The names of the run log's files and their reading order: `runs.jsonl` first, then
 * `runs-YYYY-MM-DD-NNN.jsonl` (the UTC date the file was started, a number from `001` on each date)
 * by date and number. The last one is the active file. Files are never renamed: several processes
 * may be appending to any of them.
 */

/** Name of the first file of the run log. */
export const RUN_LOG_FILE_NAME = 'runs.jsonl';

/** Where a run log file sits in the reading order. */
export interface RunLogFileName {
  /** `null` for `runs.jsonl`; otherwise the UTC date the file was started, `YYYY-MM-DD`. */
  readonly date: string | null;
  /** `0` for `runs.jsonl`; otherwise the sequence number within `date`, from 1. */
  readonly seq: number;
}

/** Canonical names only: no sign, no extra leading zeros (`0001`), no bad dates (`2025-13-40`). */
const DATED_NAME = /^runs-(\d{4}-\d{2}-\d{2})-(\d{3,})\.jsonl$/;

/** Parses a run log file name (a base name); `undefined` for `runs.jsonl.corrupt`, `runs-2025-02-30-001.jsonl`... */
export function parseRunLogName(name: string): RunLogFileName | undefined {
  if (name === RUN_LOG_FILE_NAME) return { date: null, seq: 0 };
  const match = DATED_NAME.exec(name);
  if (match === null) return undefined;
  const [, date = '', digits = ''] = match;
  const seq = Number(digits);
  if (!Number.isSafeInteger(seq) || seq < 1 || formatSeq(seq) !== digits || !isRealDate(date)) return undefined;
  return { date, seq };
}

/** Orders two run log file names for reading: `runs.jsonl` first, then by date, then by number (`-999` before `-1000`). */
export function compareRunLogNames(a: string, b: string): number {
  const pa = parseRunLogName(a)!;
  const pb = parseRunLogName(b)!;
  if (pa.date === pb.date) return pa.seq - pb.seq;
  return (pa.date ?? '') < (pb.date ?? '') ? -1 : 1; // runs.jsonl has no date: it comes first
}

/**
 * Sorts file names into reading order and drops those that are not run log files. Pure.
 * @example sortRunLogNames(['runs-2025-11-22-002.jsonl', 'other.jsonl', 'runs.jsonl']) // ['runs.jsonl', 'runs-2025-11-22-002.jsonl']
 */
export function sortRunLogNames(names: Iterable<string>): string[] {
  return [...names].filter((name) => parseRunLogName(name) !== undefined).sort(compareRunLogNames);
}

/**
 * The file (a name, or a path beside a path) that follows a full `current`: the same in every
 * process on the same UTC date, so processes that cross the limit together append to one new file.
 * Dated with `now`; when `now` is not after the current file's date (the same day, or a clock
 * behind), the number goes up instead, so the next file always sorts after the current one.
 * @example nextLogFileName('/t/runs-2025-11-22-007.jsonl', new Date('2025-11-22T23:59:59Z')) // '/t/runs-2025-11-22-008.jsonl'
 */
export function nextLogFileName(current: string, now: Date): string {
  const name = basename(current);
  const parsed = parseRunLogName(name);
  if (parsed === undefined) {
    throw new TypeError(`Expected a run log file name (runs.jsonl or runs-YYYY-MM-DD-NNN.jsonl), got \`${current}\``);
  }
  const today = now.toISOString().slice(0, 10); // UTC
  const next = parsed.date === null || today > parsed.date ? { date: today, seq: 1 } : { date: parsed.date, seq: parsed.seq + 1 };
  const nextName = `runs-${next.date}-${formatSeq(next.seq)}.jsonl`;
  return name === current ? nextName : join(dirname(current), nextName);
}

/** Every run log file in `dir`, as absolute paths in reading order (`[]` when `dir` is missing; other I/O errors throw). */
export async function listRunLogFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const names = entries.filter((entry) => !entry.isDirectory()).map((entry) => entry.name);
  const absolute = resolve(dir);
  return sortRunLogNames(names).map((name) => join(absolute, name));
}

function formatSeq(seq: number): string {
  return String(seq).padStart(3, '0');
}

function isRealDate(date: string): boolean {
  const parsed = new Date(`${date}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}
