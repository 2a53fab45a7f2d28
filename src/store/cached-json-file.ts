import { copyFileSync, readFileSync, renameSync, statSync } from 'node:fs';
import { LowSync, type SyncAdapter } from 'lowdb';
import type { Parsed } from './state-schema.js';
import { writeFileAtomicSync, type FileIdentity } from './durable-fs.js';

/** A state file's text as lowdb holds it: boxed, since lowdb treats an empty string as "no data". */
type StoredText = { readonly text: string } | null;

/**
 * lowdb's storage for one state file: read as text (`null`: no file); written atomically through a
 * temp file that is created 0600 and unique to its writer (lowdb's own TextFile shares one temp
 * name between processes and creates files with the umask's mode). Synchronous, so that a whole
 * locked transaction runs within one event-loop turn.
 */
export class OwnerOnlyTextFile implements SyncAdapter<StoredText> {
  readonly #path: string;
  /** The identity of the file as the last `write` left it (`null` before any). */
  lastWritten: FileIdentity | null = null;
  constructor(path: string) {
    this.#path = path;
  }
  read(): StoredText {
    try {
      return { text: readFileSync(this.#path, 'utf8') };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
  write(stored: StoredText): void {
    this.lastWritten = null;
    if (stored) this.lastWritten = writeFileAtomicSync(this.#path, stored.text);
  }
}

export interface CachedJsonFileOptions<T> {
  readonly parse: (json: unknown) => Parsed<T>;
  readonly serialize: (data: T) => string;
  readonly empty: () => T;
  readonly warn: (message: string) => void;
  /** What is lost when the file cannot be used, in words ("every model's circuit"). */
  readonly contents: string;
}

/**
 * One JSON document on disk, kept through lowdb (`LowSync` over an owner-only, atomic text
 * adapter: a 0600 temp file renamed over it, so lock-free readers never see a torn file) and read
 * through a cache keyed on the file's inode, size and mtime: a file nobody else touched is not
 * parsed again. Every method is synchronous (see `StateStore.transact`).
 * Locking is the caller's job.
 */
export class CachedJsonFile<T> {
  readonly path: string;
  readonly #db: LowSync<StoredText>;
  readonly #adapter: OwnerOnlyTextFile;
  readonly #options: CachedJsonFileOptions<T>;
  readonly #emptyText: string;
  /**
   * `identity: null`: the file does not exist (writing the empty document is then skipped).
   * `dropped`: the parse dropped malformed entries and no copy of the file was kept yet.
   */
  #cache: { identity: FileIdentity | null; text: string; data: T; dropped?: string } | null = null;

  constructor(path: string, options: CachedJsonFileOptions<T>) {
    this.path = path;
    this.#adapter = new OwnerOnlyTextFile(path);
    this.#db = new LowSync<StoredText>(this.#adapter, null);
    this.#options = options;
    this.#emptyText = options.serialize(options.empty());
  }

  /**
   * The current document (shared with the cache: a caller that mutates it must `write` or
   * `forget`). A file that cannot be used (not JSON, the wrong shape, or empty: what an unsynced
   * write leaves after a power loss) reads as empty, with a warning saying what was lost. With
   * `locked` it is first moved aside (`<file>.corrupt-<time>`), and a file that lost only some
   * entries is copied there, so the next write destroys nothing; if that copy cannot be made, the
   * read throws rather than let the file be overwritten.
   */
  read(locked: boolean): T {
    const identity = this.#identity();
    if (identity === null) {
      const data = this.#options.empty();
      this.#cache = { identity: null, text: this.#emptyText, data };
      return data;
    }
    if (this.#cache?.identity && sameFile(this.#cache.identity, identity)) {
      // Parsed without the lock, where no copy is made: make it before a write can drop the entries.
      if (locked && this.#cache.dropped) {
        this.#options.warn(`${this.#cache.dropped}; a copy of the file is at ${this.#keepCopy()}`);
        delete this.#cache.dropped;
      }
      return this.#cache.data;
    }

    const stored = this.#readStored();
    if (stored === null) {
      // Removed between the stat and the read: it is missing now.
      const data = this.#options.empty();
      this.#cache = { identity: null, text: this.#emptyText, data };
      return data;
    }
    const text = stored.text;
    const parsed = this.#parse(text);
    if (typeof parsed === 'string') {
      const lost = `${this.path} ${parsed}: ${this.#options.contents} ${locked ? 'started afresh' : 'reads as empty'}`;
      if (locked) this.#options.warn(`${lost}; moved it to ${this.#setAside()}`);
      else this.#options.warn(`${lost}; it will be moved aside at the next write`);
      this.#cache = null;
      return this.#options.empty();
    }
    let dropped: string | undefined;
    if (parsed.dropped.length > 0) {
      const noun = parsed.dropped.length === 1 ? 'entry' : 'entries';
      const what = `${this.path}: dropped ${parsed.dropped.length} malformed ${noun}: ${parsed.dropped.slice(0, 5).join(', ')}`;
      if (locked) this.#options.warn(`${what}; a copy of the file is at ${this.#keepCopy()}`);
      else {
        this.#options.warn(`${what}; a copy will be kept before the file is next written`);
        dropped = what;
      }
    }
    // The identity was taken before the read: if the file changed in between, the next read re-parses.
    this.#cache = { identity, text, data: parsed.data, ...(dropped ? { dropped } : {}) };
    return parsed.data;
  }

  /**
   * Persist `data` unless it serialises to exactly what is on disk (or the file is missing and
   * `data` is empty). Call it only after a `read` under the same lock, so the cache describes the
   * file as it is now. `text`: `data` already serialised (by the `serialize` option's function).
   */
  write(data: T, text = this.#options.serialize(data)): void {
    if (this.#cache && this.#cache.text === text) {
      this.#cache = { ...this.#cache, data };
      return;
    }
    try {
      this.#db.data = { text };
      this.#db.write();
    } catch (error) {
      this.#cache = null;
      throw error;
    }
    const identity = this.#adapter.lastWritten;
    this.#cache = identity ? { identity, text, data } : null;
  }

  /** The file's text through lowdb, fresh from disk (`null`: there is no file). */
  #readStored(): StoredText {
    this.#db.data = null;
    this.#db.read();
    return this.#db.data;
  }

  /** Drop the cache (after a failed transaction that may have half-changed the cached document). */
  forget(): void {
    this.#cache = null;
  }

  #parse(text: string): Parsed<T> | string {
    if (text.trim() === '') return text === '' ? 'is empty (0 bytes)' : 'holds only whitespace';
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return 'is not valid JSON';
    }
    try {
      return this.#options.parse(json);
    } catch {
      return 'does not have the expected shape';
    }
  }

  /** Move the unusable file out of the way; returns where it went. */
  #setAside(): string {
    const aside = this.#asideName();
    renameSync(this.path, aside);
    return aside;
  }

  /** Copy the file before a write drops part of it; returns the copy's name. */
  #keepCopy(): string {
    const aside = this.#asideName();
    copyFileSync(this.path, aside);
    return aside;
  }

  #asideName(): string {
    return `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  }

  #identity(): FileIdentity | null {
    // No exception for a missing file: most shards do not exist yet, and a throw costs a stack trace.
    const s = statSync(this.path, { bigint: true, throwIfNoEntry: false });
    return s ? { ino: s.ino, size: s.size, mtimeNs: s.mtimeNs } : null;
  }
}

function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs;
}
