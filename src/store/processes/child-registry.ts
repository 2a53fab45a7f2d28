import { mkdir, readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as z from 'zod';
import { parseStartTime, type ChildRecord } from '../../policy/process-identity.js';
import type { SelfIdentity } from './proc-reader.js';

/** The folder of the state dir that holds one file per running model process. */
export const CHILDREN_DIR_NAME = 'children';
const RECORD_MODE = 0o600;
/**
 * A child is recorded once it has run this long, so a quick run never touches the disk. A server
 * killed in this window leaves that one child unrecorded (the real CLI then usually dies by
 * SIGPIPE at its next write anyway).
 */
const RECORD_AFTER_MS = 50;

/**
 * Every model process this server has running, one file each in `<telemetry dir>/children/`
 * (`<pid>-<start>.json`: a {@link ChildRecord}), so that if this server is killed without a
 * chance to end them (SIGKILL, the OOM killer), the next server can (see app/orphan-sweep.ts).
 *
 * Off the run's critical path: the record is written while the child runs and removed after it
 * exited, without the run waiting; `idle()` waits for all of it (shutdown calls it). A reader that
 * finds a record empty or torn (written that instant, or by a process killed mid-write) skips it.
 */
export class ChildRegistry {
  readonly dir: string;
  readonly #identity: SelfIdentity;
  readonly #warn: (message: string) => void;
  readonly #recordAfterMs: number;
  /** Waits, writes and removals under way: what `idle()` waits for. */
  readonly #pending = new Set<Promise<unknown>>();
  #warned = false;

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
    if (this.#identity.self.start === null) return () => {};
    const exited = new AbortController();
    // Recorded once the child has run a moment (idle() waits for that moment too).
    const waited = delay(this.#recordAfterMs, undefined, { signal: exited.signal }).catch(() => {});
    const written = waited.then(() => (exited.signal.aborted ? null : this.#record(pid, bin, args, exited.signal)));
    this.#keep(written);
    return () => {
      if (exited.signal.aborted) return;
      exited.abort();
      this.#keep(written.then((file) => (file === null ? undefined : this.#remove(file))));
    };
  }

  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  #keep(work: Promise<unknown>): void {
    this.#pending.add(work);
    void work.finally(() => this.#pending.delete(work));
  }

  /** Writes the child's record: its file, or null when the child is gone or the record could not be written. */
  async #record(pid: number, bin: string, args: readonly string[], exited: AbortSignal): Promise<string | null> {
    // Its start time never changes, and it makes the pid a name (pids are reused).
    const start = await readFile(`/proc/${pid}/stat`, 'latin1').then(parseStartTime, () => null);
    if (start === null || exited.aborted) return null;
    const { self, place } = this.#identity;
    const record: ChildRecord = { pid, start, bin, args, owner: { pid: self.pid, start: self.start! }, ...place, at: Date.now() };
    const file = path.join(this.dir, `${pid}-${start}.json`);
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeFile(file, `${JSON.stringify(record)}\n`, { mode: RECORD_MODE });
      return file;
    } catch (error) {
      this.#warnOnce(`could not record model process in ${file}: ${(error as Error).message}`);
      return null;
    }
  }

  async #remove(file: string): Promise<void> {
    await unlink(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') this.#warnOnce(`could not remove ${file}: ${error.message}`);
    });
  }

  #warnOnce(message: string): void {
    if (this.#warned) return;
    this.#warned = true;
    this.#warn(`${message} (the orphan sweep will not know about it; further such errors are not reported)`);
  }
}

/** One file of the children dir, read: its record, or why it could not be used. */
type ChildFile =
  | { readonly file: string; readonly record: ChildRecord }
  | { readonly file: string; readonly record: null; readonly ageMs: number };

/** Every record in `dir` (none when the dir does not exist). */
export async function readChildRecords(dir: string, now = Date.now()): Promise<ChildFile[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
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

const pid = z.number().int().positive();
const ticks = z.number().int().nonnegative();
const childRecordSchema = z.looseObject({
  pid,
  start: ticks,
  bin: z.string(),
  args: z.array(z.string()),
  owner: z.looseObject({ pid, start: ticks }),
  host: z.string(),
  boot: z.string().nullable(),
  pidns: z.string().nullable(),
});

function parseChildRecord(text: string): ChildRecord | null {
  try {
    return (childRecordSchema.safeParse(JSON.parse(text)).data as ChildRecord | undefined) ?? null;
  } catch {
    return null;
  }
}
