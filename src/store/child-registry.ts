import { mkdir, readFile, unlink, writeFile } from 'node:fs';
import { readFile as readFileAsync, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseStartTime, type ChildRecord } from '../policy/process-identity.js';
import type { SelfIdentity } from './proc-reader.js';

/** The folder of the state dir that holds one file per running model process. */
export const CHILDREN_DIR_NAME = 'children';
const RECORD_MODE = 0o600;
/**
 * A child is recorded once it has run this long. A run that ends sooner costs nothing (measured:
 * the record's reads and writes, done right after the spawn, cost a 1 ms run hundreds of µs on a
 * busy machine, in event-loop wake-ups); a server killed in this window leaves that one child
 * unrecorded (the real CLI then usually dies by SIGPIPE at its next write anyway).
 */
export const RECORD_AFTER_MS = 50;

/**
 * Every model process this server has running, one file each in `<telemetry dir>/children/`
 * (`<pid>-<start>.json`: a {@link ChildRecord}), so that if this server is killed without a
 * chance to end them (SIGKILL, the OOM killer), the next server can (see app/orphan-sweep.ts).
 *
 * Off the run's critical path: `track` only sets a timer; once the child has run
 * {@link RECORD_AFTER_MS}, its start time is read from /proc and the record written (callback fs
 * calls) while it runs, and removed after it exited, without the run waiting. A child that exits
 * before its record is written gets none. `idle()` waits for all of it (shutdown calls it). A record is one
 * small `write`: a reader that finds it empty or torn (written that instant, or by a process killed
 * mid-write) skips it, and removes it once it is old (see app/orphan-sweep.ts).
 */
export class ChildRegistry {
  readonly dir: string;
  readonly #identity: SelfIdentity;
  readonly #warn: (message: string) => void;
  /** Writes and removals under way, and who waits for them to end. */
  #busy = 0;
  #idleWaiters: (() => void)[] = [];
  #dirReady = false;
  #warned = false;
  readonly #recordAfterMs: number;

  /** `recordAfterMs`: a child is recorded once it has run this long (see {@link RECORD_AFTER_MS}). */
  constructor(telemetryDir: string, identity: SelfIdentity, warn: (message: string) => void, recordAfterMs = RECORD_AFTER_MS) {
    this.dir = path.join(telemetryDir, CHILDREN_DIR_NAME);
    this.#identity = identity;
    this.#warn = warn;
    this.#recordAfterMs = recordAfterMs;
  }

  /**
   * Record a model process that has just started; call the returned function once it has exited.
   * Never throws and never delays the run: a record that cannot be written is reported once on
   * stderr (that child is then not covered by the sweep).
   */
  track(pid: number, bin: string, args: readonly string[]): () => void {
    const { self, place } = this.#identity;
    if (self.start === null) return noop;
    let exited = false;
    let file: string | null = null;
    let writing = true;
    this.#busy += 1;
    const settle = () => {
      writing = false;
      if (exited && file !== null) this.#remove(file);
      this.#done();
    };
    // Written once the child has run a moment: a quick run never touches the disk, and a model
    // run (seconds) gets its record while nothing else waits on this thread.
    let fired = false;
    const timer = setTimeout(() => {
      fired = true;
      readFile(`/proc/${pid}/stat`, 'latin1', (readError, stat) => {
        // Its start time never changes, and it makes the pid a name (pids are reused).
        const start = readError ? null : parseStartTime(stat);
        if (start === null || exited) return settle(); // gone already
        const record: ChildRecord = {
          pid,
          start,
          bin,
          args,
          owner: { pid: self.pid, start: self.start! },
          ...place,
          at: Date.now(),
        };
        const target = path.join(this.dir, `${pid}-${start}.json`);
        this.#writeRecord(target, `${JSON.stringify(record)}\n`, (ok) => {
          if (ok) file = target;
          settle();
        });
      });
    }, this.#recordAfterMs);
    return () => {
      if (exited) return;
      exited = true;
      if (!fired) {
        clearTimeout(timer);
        this.#done();
        return;
      }
      if (writing || file === null) return; // removed once written (or never written)
      const written = file;
      this.#busy += 1;
      // After the result is on its way: the removal is not the run's to wait for (shutdown waits, see idle()).
      setImmediate(() => {
        this.#remove(written);
        this.#done();
      });
    };
  }

  /** Resolves once every record write and removal started so far is done. */
  idle(): Promise<void> {
    if (this.#busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #writeRecord(file: string, text: string, then: (ok: boolean) => void): void {
    const write = () =>
      writeFile(file, text, { mode: RECORD_MODE }, (error) => {
        if (error?.code === 'ENOENT' && this.#dirReady) {
          this.#dirReady = false; // the dir was removed: make it again
          return this.#writeRecord(file, text, then);
        }
        if (error) this.#warnOnce(`could not record model process in ${file}: ${error.message}`);
        then(!error);
      });
    if (this.#dirReady) return write();
    mkdir(this.dir, { recursive: true, mode: 0o700 }, (error) => {
      if (error) {
        this.#warnOnce(`could not create ${this.dir}: ${error.message}`);
        return then(false);
      }
      this.#dirReady = true;
      write();
    });
  }

  #remove(file: string): void {
    this.#busy += 1;
    unlink(file, (error) => {
      if (error && error.code !== 'ENOENT') this.#warnOnce(`could not remove ${file}: ${error.message}`);
      this.#done();
    });
  }

  #done(): void {
    this.#busy -= 1;
    if (this.#busy > 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #warnOnce(message: string): void {
    if (this.#warned) return;
    this.#warned = true;
    this.#warn(`${message} (the orphan sweep will not know about it; further such errors are not reported)`);
  }
}

function noop(): void {}

/** One file of the children dir, read: its record, or why it could not be used. */
export type ChildFile =
  | { readonly file: string; readonly record: ChildRecord }
  | { readonly file: string; readonly record: null; readonly ageMs: number };

/** Every record in `dir` (none when the dir does not exist). */
export async function readChildRecords(dir: string, now = Date.now()): Promise<ChildFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const files = await Promise.all(
    names
      .filter((name) => name.endsWith('.json'))
      .map(async (name): Promise<ChildFile | null> => {
        const file = path.join(dir, name);
        try {
          const text = await readFileAsync(file, 'utf8');
          const record = parseChildRecord(text);
          if (record) return { file, record };
          const info = await stat(file);
          return { file, record: null, ageMs: now - info.mtimeMs };
        } catch {
          return null; // removed meanwhile
        }
      }),
  );
  return files.filter((entry): entry is ChildFile => entry !== null);
}

function parseChildRecord(text: string): ChildRecord | null {
  try {
    const value = JSON.parse(text) as Partial<ChildRecord> | null;
    const int = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
    const ticks = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
    const nullableString = (v: unknown) => v === null || typeof v === 'string';
    if (
      value === null ||
      typeof value !== 'object' ||
      !int(value.pid) ||
      !ticks(value.start) ||
      typeof value.bin !== 'string' ||
      !Array.isArray(value.args) ||
      !value.args.every((arg) => typeof arg === 'string') ||
      !int(value.owner?.pid) ||
      !ticks(value.owner?.start) ||
      typeof value.host !== 'string' ||
      !nullableString(value.boot) ||
      !nullableString(value.pidns)
    ) {
      return null;
    }
    return value as ChildRecord;
  } catch {
    return null;
  }
}
