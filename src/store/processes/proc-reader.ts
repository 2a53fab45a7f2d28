import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import { parseStartTime, type ProcessId, type ProcessPlace, type ProcView } from '../../policy/process-identity.js';

/** This process and where it runs, as records written by it name them. */
export interface SelfIdentity {
  readonly self: ProcessId;
  readonly place: ProcessPlace;
  /** Whether /proc can be read here (Linux): without it start times are unknown and the sweep is off. */
  readonly hasProc: boolean;
}

let cached: SelfIdentity | null = null;

/** Read once per process (a few small /proc reads). */
export function selfIdentity(): SelfIdentity {
  if (cached) return cached;
  const start = readStart(process.pid);
  const hasProc = start !== null;
  cached = {
    self: { pid: process.pid, start },
    place: {
      host: os.hostname(),
      boot: hasProc ? readText('/proc/sys/kernel/random/boot_id')?.trim() || null : null,
      pidns: hasProc ? orNull(() => readlinkSync('/proc/self/ns/pid')) : null,
    },
    hasProc,
  };
  return cached;
}

/** The start time of `pid` from `/proc/<pid>/stat`; null when there is no such process (or no /proc). */
export function readStart(pid: number): number | null {
  const stat = readText(`/proc/${pid}/stat`);
  return stat === null ? null : parseStartTime(stat);
}

/** What /proc says now, read on demand (each call is one small file read). */
export const liveProcView: ProcView = {
  startOf: readStart,
  exists(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      // EPERM: the pid is in use, by a process of another user.
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  },
  cmdlineOf(pid) {
    const text = readText(`/proc/${pid}/cmdline`);
    if (text === null || text === '') return null;
    return text.replace(/\0$/, '').split('\0');
  },
};

function readText(file: string): string | null {
  return orNull(() => readFileSync(file, 'utf8'));
}

/** What `read` returns, or null when it throws (no such process, no /proc). */
function orNull<T>(read: () => T): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}
