import { mkdir, readFile, readdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseStartTime, type ChildRecord } from '../policy/process-identity.js';
import type { SelfIdentity } from './proc-reader.js';

/** The folder of the state dir that holds one file per running model process. */
export const CHILDREN_DIR_NAME = 'children';
const RECORD_MODE = 0o600;

/**
 * Every model process this server has running, one file each in `<telemetry dir>/children/`
 * (`<pid>-<start>.json`: a {@link ChildRecord}), so that if this server is killed without a
 * chance to end them (SIGKILL, the OOM killer), the next server can (see app/orphan-sweep.ts).
 *
 * Off the run's critical path: the record is written while the child runs (its start time read
 * from /proc asynchronously), and removed after it exited, without the run waiting; `idle()`
 * waits for these writes (shutdown calls it). A record is one small `write`: a reader that finds
 * it empty or torn (written that instant, or by a process killed mid-write) skips it, and removes
 * it once it is old (see {@link readChildRecords}).
 */
export class ChildRegistry {
  readonly dir: string;
  readonly #identity: SelfIdentity;
  readonly #warn: (message: string) => void;
  readonly #pending = new Set<Promise<void>>();
  #dirReady: Promise<void> | null = null;
  #warned = false;

  constructor(telemetryDir: string, identity: SelfIdentity, warn: (message: string) => void) {
    this.dir = path.join(telemetryDir, CHILDREN_DIR_NAME);
    this.#identity = identity;
    this.#warn = warn;
  }

  /**
   * Record a model process that has just started; call the returned function once it has exited.
   * Never throws and never delays the run: a record that cannot be written is reported once on
   * stderr (that child is then not covered by the sweep).
   */
  track(pid: number, bin: string, args: readonly string[]): () => void {
    const written = this.#write(pid, bin, args);
    this.#hold(written);
    return () => this.#hold(written.then((file) => (file === null ? undefined : this.#remove(file))));
  }

  /** Resolves once every record write and removal started so far is done. */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  async #write(pid: number, bin: string, args: readonly string[]): Promise<string | null> {
    try {
      const { self, place } = this.#identity;
      // Read now, while the child runs: its start time never changes, and it makes the pid a name.
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
      const start = stat === null ? null : parseStartTime(stat);
      if (start === null || self.start === null) return null; // already gone, or no /proc
      const record: ChildRecord = {
        pid,
        start,
        bin,
        args,
        owner: { pid: self.pid, start: self.start },
        ...place,
        at: Date.now(),
      };
      this.#dirReady ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined);
      await this.#dirReady;
      const file = path.join(this.dir, `${pid}-${start}.json`);
      await writeFile(file, `${JSON.stringify(record)}\n`, { mode: RECORD_MODE });
      return file;
    } catch (error) {
      this.#dirReady = null;
      this.#warnOnce(`could not record model process ${pid} in ${this.dir}: ${(error as Error).message}`);
      return null;
    }
  }

  async #remove(file: string): Promise<void> {
    try {
      await unlink(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#warnOnce(`could not remove ${file}: ${(error as Error).message}`);
    }
  }

  #hold(work: Promise<unknown>): void {
    const done = work.then(noop, noop);
    this.#pending.add(done);
    void done.then(() => this.#pending.delete(done));
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
          const text = await readFile(file, 'utf8');
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
