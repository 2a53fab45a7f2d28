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
 * Appends JSON records as lines to one file that several processes may share.
 *
 * Each record becomes one Buffer written with a single `write(2)` on an `O_APPEND` descriptor, which
 * on Linux local filesystems keeps lines from different processes whole (not on NFS). Never use
 * `fs.promises.appendFile` for this: it writes in 512 KiB chunks and tears big lines.
 *
 * The file is opened and closed per append, so a log deleted or replaced by someone else is
 * recreated on the next append instead of written into a dead inode. Cost: open, fstat, one-byte
 * read, write, close, each a thread-pool round trip; measured 60-390 µs per ~550-byte record on
 * a busy 2-core ext4 machine, without blocking the event loop.
 */
export class JsonlAppender {
  /** The file every record is appended to. */
  readonly filePath: string;
  readonly #onError: (error: unknown, filePath: string) => void;
  readonly #fileMode: number;
  /** Tail of the queue of pending appends; it never rejects. */
  #tail: Promise<void> = Promise.resolve();

  constructor(filePath: string, options: JsonlAppenderOptions = {}) {
    this.filePath = filePath;
    this.#onError = options.onError ?? writeErrorToStderr;
    this.#fileMode = options.fileMode ?? 0o600;
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
      this.#report(error);
      return this.#tail;
    }
    const done = this.#tail.then(() => this.#write(line));
    this.#tail = done;
    return done;
  }

  /** Resolves once every append issued so far has finished (for a clean shutdown). */
  idle(): Promise<void> {
    return this.#tail;
  }

  async #write(line: Buffer): Promise<void> {
    let handle: FileHandle | undefined;
    try {
      handle = await this.#open();
      await writeFully(handle, await guardTornTail(handle, line));
    } catch (error) {
      this.#report(error);
    } finally {
      await handle?.close().catch((error: unknown) => this.#report(error));
    }
  }

  async #open(): Promise<FileHandle> {
    try {
      return await open(this.filePath, OPEN_FLAGS, this.#fileMode);
    } catch (error) {
      // Create the directory only when needed: a mkdir per append would cost a syscall for nothing.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dirname(this.filePath), { recursive: true, mode: 0o700 });
      return open(this.filePath, OPEN_FLAGS, this.#fileMode);
    }
  }

  #report(error: unknown): void {
    try {
      this.#onError(error, this.filePath);
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
 * which the kernel makes visible page by page, and which dirty-page throttling can pause for up to
 * 200 ms. (Measured with 6 processes writing 600 KB lines: deciding on the first look left 119
 * blank lines in 1200; a 20 ms settle time still left a few under load; 250 ms left none.)
 * Our write queues behind theirs in the kernel anyway, so wait until the tail either ends in `\n`
 * or stops growing for {@link TORN_SETTLE_MS}: only then is it torn. That wait is paid by the
 * first append after a crash, never in the common case.
 * Two processes can still both repair the same torn tail; the result is a blank line, which
 * readers skip.
 */
async function guardTornTail(handle: FileHandle, line: Buffer): Promise<Buffer> {
  const last = Buffer.alloc(1);
  let size = (await handle.stat()).size;
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
