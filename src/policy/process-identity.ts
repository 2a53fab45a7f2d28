/**
 * Which process a recorded pid still names, decided from what /proc says (passed in: pure).
 *
 * A pid alone does not name a process: pids are reused. A process is its pid together with its
 * start time (`/proc/<pid>/stat` field 22, clock ticks since boot), which exec does not change;
 * within one boot of one host and one pid namespace the pair never repeats. Records written by a
 * server say where they were written (host, boot id, pid namespace), so a record from another
 * machine sharing the dir, or from a container with its own pids, is never judged by this one.
 */

/** Where a process runs: pids mean something only within one boot of one host, in one pid namespace. */
export interface ProcessPlace {
  readonly host: string;
  /** `/proc/sys/kernel/random/boot_id`; null where there is no /proc. */
  readonly boot: string | null;
  /** The pid namespace (`readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`); null where unknown. */
  readonly pidns: string | null;
}

/** A process: its pid and, where /proc exists, its start time. */
export interface ProcessId {
  readonly pid: number;
  /** Clock ticks since boot (`/proc/<pid>/stat` field 22); null where there is no /proc. */
  readonly start: number | null;
}

/** What the caller can learn about processes now (a /proc reader, or a fake in tests). */
export interface ProcView {
  /** The start time of the process with this pid; null when no process has it. */
  startOf(pid: number): number | null;
  /** Whether a process has this pid (where there is no /proc and start times are unknown). */
  exists(pid: number): boolean;
  /** Its argv, or null when no process has this pid (or it cannot be read). */
  cmdlineOf(pid: number): readonly string[] | null;
}

/**
 * Field 22 (starttime) of a `/proc/<pid>/stat` line. The second field, the command name in
 * parentheses, may itself hold spaces and `)`, so fields are counted from the last `)`.
 */
export function parseStartTime(stat: string): number | null {
  const close = stat.lastIndexOf(')');
  if (close === -1) return null;
  // After ")": field 3 (state) is the first; starttime (22) is the 20th.
  const field = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/)[19];
  if (field === undefined || !/^\d+$/.test(field)) return null;
  const value = Number(field);
  return Number.isSafeInteger(value) ? value : null;
}

/** Whether `id` still names the same process: same start time (or, without /proc, the pid is in use). */
export function isSameProcess(id: ProcessId, proc: ProcView): boolean {
  if (id.start === null) return proc.exists(id.pid);
  return proc.startOf(id.pid) === id.start;
}

/**
 * Where a record was written, seen from here: `here` (its pids can be checked), `previous_boot`
 * (this host has rebooted since: every process it names is gone), or `elsewhere` (another host or
 * pid namespace: its pids mean nothing here, so it is left alone).
 */
function placeOf(record: ProcessPlace, here: ProcessPlace): 'here' | 'previous_boot' | 'elsewhere' {
  if (record.host !== here.host) return 'elsewhere';
  if (record.boot !== null && here.boot !== null && record.boot !== here.boot) return 'previous_boot';
  if (record.pidns !== here.pidns) return 'elsewhere';
  return 'here';
}

/**
 * Whether the process that wrote a record (a server, a slot holder) is alive: `unknown` when the
 * record comes from elsewhere (another host or pid namespace) and cannot be judged from here.
 */
export function livenessOf(owner: ProcessId & ProcessPlace, here: ProcessPlace, proc: ProcView): 'alive' | 'dead' | 'unknown' {
  const place = placeOf(owner, here);
  if (place === 'elsewhere') return 'unknown';
  if (place === 'previous_boot') return 'dead';
  return isSameProcess(owner, proc) ? 'alive' : 'dead';
}

/** A model process as its server recorded it (`children/<pid>-<start>.json`). */
export interface ChildRecord extends ProcessPlace {
  readonly pid: number;
  readonly start: number;
  /** The CLI as spawned (OLLAMA_BIN) and its arguments (never the prompt: it goes on stdin). */
  readonly bin: string;
  readonly args: readonly string[];
  /** The server that spawned it. */
  readonly owner: { readonly pid: number; readonly start: number };
  /** Epoch ms of the spawn. */
  readonly at: number;
}

type SweepVerdict =
  /** Not ours to touch: its server is alive, or it was written on another host or in another pid namespace. */
  | { readonly action: 'keep'; readonly why: 'owner_alive' | 'elsewhere' }
  /** Its server is gone and so is the child (or its pid now names another process): only the record goes. */
  | { readonly action: 'forget'; readonly why: 'previous_boot' | 'child_gone' | 'pid_reused' }
  /** Its server is gone and the child is still running: end its process group, then forget it. */
  | { readonly action: 'end' };

/**
 * What the sweep does with one record. A child is ended only when its server is gone (the pid is
 * free or names a process that started at another time) and its own pid still names the same
 * process: same start time, and a command line that ends with the recorded CLI and arguments.
 */
export function judgeChildRecord(record: ChildRecord, here: ProcessPlace, proc: ProcView): SweepVerdict {
  const place = placeOf(record, here);
  if (place === 'elsewhere') return { action: 'keep', why: 'elsewhere' };
  if (place === 'previous_boot') return { action: 'forget', why: 'previous_boot' };
  if (isSameProcess(record.owner, proc)) return { action: 'keep', why: 'owner_alive' };
  const start = proc.startOf(record.pid);
  if (start === null) return { action: 'forget', why: 'child_gone' };
  if (start !== record.start) return { action: 'forget', why: 'pid_reused' };
  const cmdline = proc.cmdlineOf(record.pid);
  if (cmdline === null) return { action: 'forget', why: 'child_gone' };
  return commandMatches(cmdline, record.bin, record.args) ? { action: 'end' } : { action: 'forget', why: 'pid_reused' };
}

/**
 * Whether a process's argv is the CLI started with `args`: it ends with `args`, preceded by the
 * program. The program is compared by base name: the argv holds the name as spawned (`ollama`),
 * or for a script run through its `#!` line, the interpreter then the script's resolved path.
 */
export function commandMatches(cmdline: readonly string[], bin: string, args: readonly string[]): boolean {
  const at = cmdline.length - args.length - 1;
  if (at < 0) return false;
  if (baseName(cmdline[at]!) !== baseName(bin)) return false;
  return args.every((arg, i) => cmdline[at + 1 + i] === arg);
}

function baseName(file: string): string {
  return file.slice(Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\')) + 1);
}
