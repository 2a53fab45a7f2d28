import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

// Imports nothing from the project: the multi-process tests run this file alone in plain `node`.

export interface JsonlAppenderOptions {
  /**
   * Called when a record could not be written; the record is dropped and `append` still resolves:
   * losing one audit line must never fail the run it describes. @default one line on stderr
   */
  readonly onError?: (error: unknown, filePath: string) => void;
  /** Move on to a new file when the active one is full. Without it every record goes to `filePath`. */
  readonly rotation?: RotationOptions;
}

/** The files of a log that rotates. The appender never renames or deletes one: other processes may be appending to it. */
export interface LogFileSequence {
  /** Every existing file of the log in reading order, the active one last, spelt as `next` and `filePath` are. */
  list(): Promise<readonly string[]>;
  /** The file after a full `current`: the same in every process at the same date, so they share one new file. */
  next(current: string, now: Date): string;
}

export interface RotationOptions {
  /** A line goes to the next file when it would take a non-empty active file past this many bytes. */
  readonly maxBytes: number;
  readonly files: LogFileSequence;
  /** Clock used to name new files. */
  readonly now: () => Date;
}

// O_RDWR, not O_WRONLY: the torn-line guard reads the last byte. O_APPEND makes every write land
// at the current end of file, whatever other processes wrote meanwhile.
const OPEN_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;
/** Permissions of a file the appender creates (not of an existing one): lines may hold prompts and outputs. */
const FILE_MODE = 0o600;
const NEWLINE = 0x0a;
/** How long a tail without `\n` must stop growing before it counts as torn. */
const TORN_SETTLE_MS = 250;
const TORN_POLL_MS = 2;
const TORN_MAX_WAIT_MS = 2_000;
/** After this many full files in a row a writer appends to the last anyway, so an append always ends. */
const MAX_HOPS = 16;
const EMPTY = Buffer.alloc(0);

/**
 * Appends JSON records as lines to a file that several processes may share. Each record is one
 * `write(2)` on an `O_APPEND` descriptor, which on local filesystems (not NFS) keeps lines from
 * different processes whole (`appendFile` writes in 512 KiB chunks and would tear big lines). The
 * file is opened per append, so a log deleted by someone else is recreated; appends of one instance
 * keep call order.
 *
 * With `rotation`, a line that would take the last file past `maxBytes` goes to `files.next(active)`,
 * opened with `O_CREAT` (never `O_EXCL`) so that processes crossing the limit together share it; a
 * full file's torn last line is ended first, so no torn line is glued onto the next file's first.
 * The size check and the write are not atomic across processes: with `k` of them, a file holds at
 * most `max(maxBytes, its largest line) + (k - 1) * L` bytes (`L` the largest line).
 */
export class JsonlAppender {
  readonly #onError: (error: unknown, filePath: string) => void;
  readonly #rotation: RotationOptions | undefined;
  /** Where the last record went (or `filePath`). */
  #active: string;
  /** Tail of the queue of appends; it never rejects. */
  #tail: Promise<void> = Promise.resolve();

  /** @param filePath the file records go to; with `rotation`, the log's first file, used until `files.list()` returns one */
  constructor(filePath: string, options: JsonlAppenderOptions = {}) {
    this.#active = filePath;
    this.#onError = options.onError ?? writeErrorToStderr;
    this.#rotation = options.rotation;
    if (this.#rotation !== undefined && !(this.#rotation.maxBytes >= 1)) {
      throw new RangeError(`Expected \`maxBytes\` to be a number from 1 and up, got \`${this.#rotation.maxBytes}\``);
    }
  }

  /** The file the last record was written to (`filePath` before the first one). */
  get activeFile(): string {
    return this.#active;
  }

  /** Appends `record` as one line, after this instance's earlier appends. Never rejects: failures go to `onError`. */
  append(record: object): Promise<void> {
    // Serialise now, so the line reflects the record as it was at call time.
    let line: Buffer;
    try {
      line = Buffer.from(toJsonLine(record), 'utf8');
    } catch (error) {
      this.#report(error, this.#active);
      return this.#tail;
    }
    this.#tail = this.#tail.then(() => this.#write(line));
    return this.#tail;
  }

  /** Resolves once every append issued so far has finished (for a clean shutdown). */
  idle(): Promise<void> {
    return this.#tail;
  }

  async #write(line: Buffer): Promise<void> {
    const rotation = this.#rotation;
    let file = this.#active;
    try {
      if (rotation !== undefined) file = await lastFile(rotation, file);
      // Each turn moves to a file later in reading order; MAX_HOPS guards against a sequence that misbehaves.
      for (let hops = 0; ; hops += 1) {
        const room = rotation === undefined || hops >= MAX_HOPS ? Infinity : rotation.maxBytes;
        if (await this.#writeUnlessFull(file, line, room)) return;
        const latest = await lastFile(rotation!, file);
        file = latest !== file ? latest : rotation!.files.next(file, rotation!.now());
      }
    } catch (error) {
      this.#report(error, file);
    }
  }

  /** Appends `line` to `file` and returns `true`, or `false` when the file is not empty and the line would pass `maxBytes`. */
  async #writeUnlessFull(file: string, line: Buffer, maxBytes: number): Promise<boolean> {
    const handle = await this.#open(file);
    try {
      const size = (await handle.stat()).size;
      if (size > 0 && size + line.length > maxBytes) {
        // A full file's torn last line is ended now: nobody will append there again to repair it.
        const repair = await guardTornTail(handle, EMPTY, size);
        if (repair.length > 0) await writeFully(handle, repair);
        return false;
      }
      this.#active = file;
      await writeFully(handle, await guardTornTail(handle, line, size));
      return true;
    } finally {
      await handle.close().catch((error: unknown) => this.#report(error, file));
    }
  }

  async #open(file: string): Promise<FileHandle> {
    try {
      return await open(file, OPEN_FLAGS, FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      return open(file, OPEN_FLAGS, FILE_MODE);
    }
  }

  #report(error: unknown, file: string): void {
    try {
      this.#onError(error, file);
    } catch {
      // A throwing onError must not turn a lost log line into a failed run.
    }
  }
}

/** The last file of the log as listed now, or `fallback` when there is none. */
async function lastFile(rotation: RotationOptions, fallback: string): Promise<string> {
  return (await rotation.files.list()).at(-1) ?? fallback;
}

/**
 * Serialises a record to one JSON line ending in `\n`. `JSON.stringify` escapes `\n` and `\r` in
 * strings; U+2028/U+2029 are escaped too, since some line readers split on them.
 * @throws when the record cannot be serialised (BigInt, cycle) or is not a JSON object
 */
export function toJsonLine(record: object): string {
  const json: unknown = JSON.stringify(record);
  // `toJSON` can turn an object into anything; readers skip whatever is not an object.
  if (typeof json !== 'string' || !json.startsWith('{')) {
    throw new TypeError(`Expected a record that serialises to a JSON object, got \`${String(json)}\``);
  }
  return `${json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')}\n`;
}

/**
 * `line`, preceded by `\n` when the file's last line is torn (a writer killed mid-write), so that
 * the record is not glued onto it and lost too. A tail without `\n` may also be another process's
 * write in progress (the kernel shows it page by page), so it counts as torn only once it has stopped
 * growing for {@link TORN_SETTLE_MS}: a wait paid only after a crash. Two processes repairing the
 * same tail leave a blank line, which readers skip.
 */
async function guardTornTail(handle: FileHandle, line: Buffer, sizeNow: number): Promise<Buffer> {
  const last = Buffer.alloc(1);
  let size = sizeNow;
  const started = Date.now();
  let stableSince = started;
  // Bounded: a tail that keeps growing without ever ending a line is someone else's problem.
  while (Date.now() - started < TORN_MAX_WAIT_MS) {
    if (size === 0) return line;
    const { bytesRead } = await handle.read(last, 0, 1, size - 1);
    if (bytesRead === 1 && last[0] === NEWLINE) return line;
    if (Date.now() - stableSince >= TORN_SETTLE_MS) break;
    await delay(TORN_POLL_MS);
    const now = (await handle.stat()).size;
    if (now !== size) stableSince = Date.now();
    size = now;
  }
  return Buffer.concat([Buffer.from([NEWLINE]), line]);
}

/**
 * Writes the whole buffer. A regular file returns a short write only on a full disk or a size
 * limit; the rest then follows in further writes, which beats dropping the tail of the line.
 */
async function writeFully(handle: FileHandle, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset, null);
    if (bytesWritten <= 0) throw new Error(`write returned ${bytesWritten} bytes`);
    offset += bytesWritten;
  }
}

function writeErrorToStderr(error: unknown, filePath: string): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`ollama-runner-mcp: could not append to ${filePath}: ${message}\n`);
}
