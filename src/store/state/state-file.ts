import { copyFile, rename } from 'node:fs/promises';
import { Low } from 'lowdb';
import { readTextIfAny, writeFileAtomic } from '../durable-fs.js';
import { isUnusableDocument, type Parsed } from './state-schema.js';

interface StateFileOptions<T> {
  /** Validate parsed JSON; throws UnusableDocumentError when nothing of it can be kept. */
  readonly parse: (json: unknown) => Parsed<T>;
  readonly empty: () => T;
  /** The document as written. @default the data itself */
  readonly toJson?: (data: T) => unknown;
  readonly warn: (message: string) => void;
  /** What is lost when the file cannot be used, in words ("every model's circuit breaker"). */
  readonly contents: string;
}

/**
 * One state file as a lowdb database: `db.data` is the typed, validated document. Under the
 * store's lock a transaction calls `read` (lowdb's `db.read()`), changes `db.data`, and calls
 * `save`, which writes it (`db.write()`, atomic: lock-free readers never see a torn document) when
 * it changed. `peek` reads without the lock and changes nothing. Locking is the caller's job.
 *
 * A missing file reads as the empty document (lowdb would keep the old data when its storage reads
 * nothing). A file that cannot be used (not JSON, not an object, or empty: what an unsynced write
 * leaves after a power loss) reads as the empty document, with a warning saying what was lost;
 * under the lock it is first moved aside (`<file>.corrupt-<time>`), never overwritten. A file that
 * needed repairs (malformed entries dropped, a field of the wrong type reset) keeps every valid
 * part; under the lock it is copied aside and written back repaired. A repair is said once per
 * version of the file, and so is an unusable file read without the lock.
 */
export class StateFile<T> {
  readonly path: string;
  readonly db: Low<T>;
  readonly #options: StateFileOptions<T>;
  /** `db.data` as `read` left it, serialised: `save` writes only when it changed. */
  #readText = '';
  /** Set by `read` when the file needed repairs: it is written back even if nothing else changed. */
  #repaired = false;
  /** The text of the file last warned about: each version is said once. */
  #warnedText: string | null = null;

  constructor(path: string, options: StateFileOptions<T>) {
    this.path = path;
    this.#options = options;
    const storage = { read: () => this.#load(), write: (data: T) => writeFileAtomic(path, this.#serialize(data)) };
    this.db = new Low(storage, options.empty());
  }

  /** Under the lock: load the file into `db.data` (see the class comment for unusable files). */
  async read(): Promise<T> {
    await this.db.read();
    this.#readText = this.#serialize(this.db.data);
    return this.db.data;
  }

  /** Under the lock, after `read`: write `db.data` if it changed, or if the file was repaired. */
  async save(): Promise<void> {
    if (!this.#repaired && this.#serialize(this.db.data) === this.#readText) return;
    await this.db.write();
    this.#repaired = false;
  }

  /** Without the lock: the document as the file holds it now; nothing is moved or written. */
  async peek(): Promise<T> {
    const text = await readTextIfAny(this.path);
    if (text === null) return this.#options.empty();
    const decoded = decode(text, this.#options.parse);
    if ('unusable' in decoded) {
      const message = `${this.path} ${decoded.unusable}: ${this.#options.contents} reads as empty; it will be moved aside at the next write`;
      this.#warnOnce(text, message);
      return this.#options.empty();
    }
    if (decoded.repairs)
      this.#warnOnce(
        text,
        `${this.path}: ${decoded.repairs}; the next write keeps a copy of the file (${this.path}.corrupt-<time>)`,
      );
    return decoded.data;
  }

  /** lowdb's read, under the lock: an unusable file is moved aside, a repaired one copied aside. */
  async #load(): Promise<T> {
    this.#repaired = false;
    const text = await readTextIfAny(this.path);
    if (text === null) return this.#options.empty();
    const decoded = decode(text, this.#options.parse);
    if ('unusable' in decoded) {
      const aside = asideName(this.path);
      await rename(this.path, aside);
      this.#options.warn(`${this.path} ${decoded.unusable}: ${this.#options.contents} started afresh; moved it to ${aside}`);
      return this.#options.empty();
    }
    if (decoded.repairs) {
      // If the copy cannot be made, the read fails rather than let a write destroy the dropped parts.
      const copy = asideName(this.path);
      await copyFile(this.path, copy);
      this.#warnOnce(text, `${this.path}: ${decoded.repairs}; a copy of the file is at ${copy}`);
      this.#repaired = true;
    }
    return decoded.data;
  }

  #serialize(data: T): string {
    return JSON.stringify(this.#options.toJson ? this.#options.toJson(data) : data);
  }

  #warnOnce(text: string, message: string): void {
    if (text === this.#warnedText) return;
    this.#warnedText = text;
    this.#options.warn(message);
  }
}

/** A file's text validated and what was repaired (in words; empty when nothing was), or why none of it can be used. */
function decode<T>(text: string, parse: (json: unknown) => Parsed<T>): { data: T; repairs: string } | { unusable: string } {
  if (text.trim() === '') return { unusable: text === '' ? 'is empty (0 bytes)' : 'holds only whitespace' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { unusable: 'is not valid JSON' };
  }
  try {
    const parsed = parse(json);
    return { data: parsed.data, repairs: describeRepairs(parsed) };
  } catch (error) {
    if (isUnusableDocument(error)) return { unusable: `does not have the expected shape (${error.message})` };
    throw error;
  }
}

/** What was repaired, in words (empty when nothing was). */
function describeRepairs({ dropped, reset }: Parsed<unknown>): string {
  const parts: string[] = [];
  if (dropped.length > 0) {
    const noun = dropped.length === 1 ? 'entry' : 'entries';
    parts.push(`dropped ${dropped.length} malformed ${noun}: ${dropped.slice(0, 5).join(', ')}`);
  }
  if (reset.length > 0) parts.push(`reset a field of the wrong type to its default: ${reset.join(', ')}`);
  return parts.join('; ');
}

function asideName(file: string): string {
  return `${file}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
}
