import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

// This module imports nothing from the project on purpose: the multi-process test transpiles this
// file alone and runs it in plain `node` children. Keep it dependency-free.

/** Options of {@link JsonlAppender}. */
export interface JsonlAppenderOptions {
  /**
   * Called when a record could not be written (serialisation or I/O error). The record is dropped
   * and `append` still resolves: losing one audit line must never fail the run it describes.
   * @default one line on stderr (never stdout: on a stdio MCP server stdout is the protocol)
   */
  readonly onError?: (error: unknown, filePath: string) => void;
  /**
   * Permissions of the file when this appender creates it (the umask can only remove bits).
   * Not applied to an existing file.
   * @default 0o600, since lines may hold prompts and outputs when content logging is on
   */
  readonly fileMode?: number;
  /**
   * Move on to a new file when the active one is full, instead of growing one file forever.
   * Without it every record goes to `filePath`.
   */
  readonly rotation?: RotationOptions;
}

/**
 * The files of a log that rotates, and how to name the next one. The appender never renames or
 * deletes a file: other processes may be appending to any of them.
 */
export interface LogFileSequence {
  /**
   * Every existing file of the log, in reading order; the last one is the active file. `[]` when
   * none exists yet (the appender then writes to its `filePath`). Paths must be spelt the way
   * `next` spells them and the way `filePath` is spelt (e.g. all absolute), since they are compared.
   */
  list(): Promise<readonly string[]>;
  /**
   * The file that follows `current` once it is full. Must sort after `current` in `list()` order,
   * and must be the same in every process for the same `current` (at the same date), so that
   * processes crossing the limit at the same moment all append to one new file.
   */
  next(current: string, now: Date): string;
}

/** Options of a rotating {@link JsonlAppender}. */
export interface RotationOptions {
  /**
   * A line goes to the next file when it would take the active file past this many bytes.
   * The file is then "full" for this line; a line bigger than the limit goes alone into a new file.
   * Overshoot: see {@link JsonlAppender}.
   */
  readonly maxBytes: number;
  readonly files: LogFileSequence;
  /**
   * The active file is cached; the directory is listed again when the cached file is full for the
   * next line, or when the last listing is older than this, to notice that another process moved
   * on to a new file (e.g. for a line that did not fit, while the cached file still has room).
   * `0` lists before every append.
   * @default 1000
   */
  readonly recheckMs?: number;
  /** Clock used to name new files. @default () => new Date() */
  readonly now?: () => Date;
}

// O_RDWR, not O_WRONLY: the torn-line guard reads the last byte. O_APPEND makes every write land
// at the current end of file, whatever other processes wrote meanwhile.
const OPEN_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;
const NEWLINE = 0x0a;
/** How long a tail without `\n` must stop growing before it counts as torn. */
const TORN_SETTLE_MS = 250;
const TORN_POLL_MS = 2;
const TORN_MAX_WAIT_MS = 2_000;
/**
 * A writer that finds this many files full in a row writes to the last one anyway. Unreachable in
 * practice (it takes other processes filling each new file between our open and our fstat); it
 * only guarantees that an append always ends.
 */
const MAX_HOPS = 16;
const DEFAULT_RECHECK_MS = 1_000;
const EMPTY = Buffer.alloc(0);

/**
 * Appends JSON records as lines to one file that several processes may share.
 *
 * Each record becomes one Buffer written with a single `write(2)` on an `O_APPEND` descriptor, which
 * on Linux local filesystems keeps lines from different processes whole (not on NFS). Never use
 * `fs.promises.appendFile` for this: it writes in 512 KiB chunks and tears big lines.
 *
 * The file is opened and closed per append, so a log deleted or replaced by someone else is
 * recreated on the next append instead of written into a dead inode. Appends queue behind each
 * other, so lines from one instance keep call order.
 *
 * With `rotation`, the append goes to the active file (the last of `rotation.files.list()`, cached)
 * unless its size (fstat after open) plus the line would pass `maxBytes` and it is not empty; then
 * the directory is listed again and the line goes to a later file another process already started,
 * or to `rotation.files.next(active)`, opened with `O_APPEND|O_CREAT` (never `O_EXCL`): processes
 * crossing the limit together compute the same name and all append there. Nothing is renamed.
 * Before leaving a full file whose last line is torn, the appender ends that line with `\n`, so
 * that the files concatenated in reading order never glue a torn line onto the next file's first.
 *
 * **Size bound.** The check and the write are not atomic across processes: with `k` processes on
 * one log, a file holds at most `max(maxBytes, its largest line) + (k - 1) * L` bytes (`L` the
 * largest line): every process has at most one line in flight past the last fstat. One process
 * alone never passes `maxBytes` except with a single oversized line.
 */
export class JsonlAppender {
  /**
   * The file every record is appended to; with `rotation`, the first file of the log, used until
   * `rotation.files.list()` returns a file.
   */
  readonly filePath: string;
  readonly #onError: (error: unknown, filePath: string) => void;
  readonly #fileMode: number;
  readonly #rotation: Required<RotationOptions> | undefined;
  /** Where the last record went (or `filePath`): the cached active file. */
  #active: string;
  /** `performance.now()` of the last listing; -Infinity forces one before the first append. */
  #listedAt = Number.NEGATIVE_INFINITY;
  /** Tail of the queue of appends; it never rejects. */
  #tail: Promise<void> = Promise.resolve();

  /** @throws RangeError when `rotation.maxBytes` or `rotation.recheckMs` is not a number from 1 (0) and up */
  constructor(filePath: string, options: JsonlAppenderOptions = {}) {
    this.filePath = filePath;
    this.#active = filePath;
    this.#onError = options.onError ?? writeErrorToStderr;
    this.#fileMode = options.fileMode ?? 0o600;
    const rotation = options.rotation;
    if (rotation !== undefined) {
      if (!(rotation.maxBytes >= 1)) {
        throw new RangeError(`Expected \`maxBytes\` to be a number from 1 and up, got \`${rotation.maxBytes}\``);
      }
      const recheckMs = rotation.recheckMs ?? DEFAULT_RECHECK_MS;
      if (!(recheckMs >= 0)) throw new RangeError(`Expected \`recheckMs\` to be a number from 0 and up, got \`${recheckMs}\``);
      this.#rotation = { maxBytes: rotation.maxBytes, files: rotation.files, recheckMs, now: rotation.now ?? (() => new Date()) };
    }
  }

  /** The file the last record was written to (`filePath` before the first one). */
  get activeFile(): string {
    return this.#active;
  }

  /**
   * Appends `record` as one line. Appends from this instance land in call order.
   * Never rejects: failures go to `onError` and the record is dropped.
   */
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
      if (rotation !== undefined && performance.now() - this.#listedAt >= rotation.recheckMs) {
        file = await this.#latest(rotation, file);
      }
      // Each turn moves to a file later in reading order (another process's newer file, or the
      // next name), so this ends; MAX_HOPS only guards against a sequence that misbehaves.
      for (let hops = 0; ; hops += 1) {
        const room = rotation === undefined || hops >= MAX_HOPS ? Infinity : rotation.maxBytes;
        if (await this.#writeUnlessFull(file, line, room)) return;
        const latest = await this.#latest(rotation!, file);
        file = latest !== file ? latest : rotation!.files.next(file, rotation!.now());
      }
    } catch (error) {
      this.#report(error, file);
    }
  }

  /**
   * Appends `line` to `file` and returns `true`, or returns `false` when the file is not empty and
   * the line would take it past `maxBytes` (its torn last line, if any, then ended with `\n`).
   */
  async #writeUnlessFull(file: string, line: Buffer, maxBytes: number): Promise<boolean> {
    const handle = await this.#open(file);
    try {
      const size = (await handle.stat()).size;
      if (size > 0 && size + line.length > maxBytes) {
        await endTornLine(handle, size);
        return false;
      }
      this.#active = file;
      await writeFully(handle, await guardTornTail(handle, line, size));
      return true;
    } finally {
      await handle.close().catch((error: unknown) => this.#report(error, file));
    }
  }

  /** The last file of the log as listed now, or `fallback` when there is none. */
  async #latest(rotation: Required<RotationOptions>, fallback: string): Promise<string> {
    const files = await rotation.files.list();
    this.#listedAt = performance.now();
    return files.at(-1) ?? fallback;
  }

  async #open(file: string): Promise<FileHandle> {
    try {
      return await open(file, OPEN_FLAGS, this.#fileMode);
    } catch (error) {
      // Create the directory only when needed: a mkdir per append would cost a syscall for nothing.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      return open(file, OPEN_FLAGS, this.#fileMode);
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

/**
 * Serialises a record to one JSON line ending in `\n`.
 * `JSON.stringify` escapes `\n` and `\r` inside strings, so the only raw newline is the last byte.
 * U+2028/U+2029 are escaped too: they are valid raw in JSON but some line readers split on them.
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
 * A writer killed mid-write leaves a last line without `\n`. Gluing the next record onto it would
 * lose that record too, so start on a fresh line.
 *
 * A tail without `\n` is not always torn: another process may be in the middle of its own write,
 * which the kernel makes visible page by page and dirty-page throttling can pause. So wait until
 * the tail either ends in `\n` or stops growing for {@link TORN_SETTLE_MS}: only then is it torn.
 * That wait is paid by the first append after a crash, never in the common case.
 * Two processes can still both repair the same torn tail; the result is a blank line, which
 * readers skip.
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
 * Before leaving a full file for the next one: if its last line is torn (see {@link guardTornTail}),
 * end it with `\n`. Nobody would ever append to this file again to repair it, and without the
 * `\n` a reader concatenating the files (`cat`, `jq` with several files) would glue the torn line
 * onto the first line of the next file and lose that record too.
 */
async function endTornLine(handle: FileHandle, size: number): Promise<void> {
  const repair = await guardTornTail(handle, EMPTY, size);
  if (repair.length > 0) await writeFully(handle, repair);
}

/**
 * One `write(2)` of the whole buffer. Regular files do not return short writes except on a full
 * disk or a file size limit; if one happens the rest follows in further writes, which another
 * process may interleave with — still better than dropping the tail of the line.
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
