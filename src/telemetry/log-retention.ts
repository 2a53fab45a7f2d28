import { open, stat, unlink } from 'node:fs/promises';

import { listRunLogFiles } from './log-files.js';
import type { RetentionClockFile } from './retention-clock.js';

// Imports only node: builtins and src/telemetry/: the multi-process rotation test runs this folder alone in plain `node`.

/** How long the run log's files are kept, and how much of them. */
export interface RetentionPolicy {
  /** A rotated file whose newest record is older than this is deleted. `0` keeps files whatever their age. */
  readonly maxAgeMs: number;
  /** While the log's files together hold more bytes than this, the oldest rotated one is deleted. `0`: no limit. */
  readonly maxTotalBytes: number;
}

/** 90 days and 1 GiB, as `OLLAMA_MCP_LOG_RETENTION_DAYS` and `OLLAMA_MCP_LOG_MAX_TOTAL_BYTES`. */
export const DEFAULT_RETENTION: RetentionPolicy = { maxAgeMs: 90 * 86_400_000, maxTotalBytes: 1_073_741_824 };

/** Never deleted: the active file, and the one before, which a process that listed the files a moment ago may still append to. */
const KEEP_NEWEST = 2;
/** Nor is a file written within the last minute: a process that was slow to notice a new file may still be on it. */
const QUIET_MS = 60_000;
/** The tail read to find a file's last record: far more than a record holds without prompt logging. */
const TAIL_BYTES = 64 * 1024;

/**
 * Whether every record of a log file is older than `timeMs`: its mtime and its last record's `ts`
 * (read from the file's tail) both come before it; the mtime alone when the tail holds no readable
 * `ts`. A missing file holds no record, so it is "older".
 */
export async function isOlderThan(file: string, timeMs: number): Promise<boolean> {
  let info;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  if (!(info.mtimeMs < timeMs)) return false;
  const lastTs = await lastRecordTime(file, info.size);
  return !(lastTs >= timeMs);
}

/** Epoch milliseconds of the `ts` of the last record in the file's tail that has one, or NaN. */
async function lastRecordTime(file: string, size: number): Promise<number> {
  const length = Math.min(size, TAIL_BYTES);
  const buffer = Buffer.alloc(length);
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Number.NaN; // deleted meanwhile
    throw error;
  }
  try {
    await handle.read(buffer, 0, length, size - length);
  } finally {
    await handle.close();
  }
  // The first line of the tail may be cut: it is the last one tried, and one that does not parse is skipped.
  const lines = buffer.toString('utf8').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const ts = tsOf(lines[i]!);
    if (!Number.isNaN(ts)) return ts;
  }
  return Number.NaN;
}

function tsOf(line: string): number {
  try {
    const record: unknown = JSON.parse(line);
    const ts = typeof record === 'object' && record !== null ? (record as { ts?: unknown }).ts : undefined;
    return typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** What {@link pruneRunLog} did. */
export interface PruneResult {
  /** Files deleted, oldest first. */
  readonly deleted: readonly string[];
  /** Files that could not be deleted (e.g. open on Windows, permissions), to try again next time. */
  readonly failed: readonly { readonly file: string; readonly error: unknown }[];
}

/**
 * Deletes, oldest first, the rotated files `policy` no longer keeps: those past `maxAgeMs`, and the
 * oldest while all together pass `maxTotalBytes`; never one a process may append to. Several
 * processes may prune at once. Ages are judged as of `clock`'s time for `now` (else `now`), so a
 * forward step of the wall clock does not age every file at once.
 */
export async function pruneRunLog(
  dir: string,
  policy: RetentionPolicy,
  now: Date,
  clock: Pick<RetentionClockFile, 'tick'> | null = null,
): Promise<PruneResult> {
  const asOf = clock === null ? now.getTime() : await clock.tick(now.getTime());
  const files = await listRunLogFiles(dir);
  const candidates = files.slice(0, Math.max(0, files.length - KEEP_NEWEST));
  const deleted: string[] = [];
  const failed: { file: string; error: unknown }[] = [];
  if (candidates.length === 0) return { deleted, failed };
  const sizes = await Promise.all(files.map(sizeOf));
  let total = sizes.reduce((sum, size) => sum + size, 0);
  for (const [i, file] of candidates.entries()) {
    if (!(await pastRetention(file, total, policy, { now: now.getTime(), asOf }))) continue;
    try {
      await unlink(file);
      deleted.push(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        failed.push({ file, error });
        continue;
      }
    }
    total -= sizes[i]!;
  }
  return { deleted, failed };
}

/** Whether a rotated file goes: quiet for a minute of the wall clock, and the log too big or the file too old. */
async function pastRetention(
  file: string,
  totalBytes: number,
  policy: RetentionPolicy,
  time: { readonly now: number; readonly asOf: number },
): Promise<boolean> {
  if (!(await isOlderThan(file, time.now - QUIET_MS))) return false;
  if (policy.maxTotalBytes > 0 && totalBytes > policy.maxTotalBytes) return true;
  return policy.maxAgeMs > 0 && (await isOlderThan(file, time.asOf - policy.maxAgeMs));
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0; // gone meanwhile
  }
}
