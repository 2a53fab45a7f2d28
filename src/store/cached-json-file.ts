import { rename, stat } from 'node:fs/promises';
import { Low } from 'lowdb';
import { TextFile } from 'lowdb/node';
import type { Parsed } from './state-schema.js';

interface FileIdentity {
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
}

export interface CachedJsonFileOptions<T> {
  readonly parse: (json: unknown) => Parsed<T>;
  readonly serialize: (data: T) => string;
  readonly empty: () => T;
  readonly warn: (message: string) => void;
}

/**
 * One JSON document on disk, written atomically (lowdb's TextFile: steno writes a temp file and
 * renames it, so lock-free readers never see a torn file) and read through a cache keyed on the
 * file's inode, size and mtime: a file nobody else touched is not parsed again.
 * Locking is the caller's job.
 */
export class CachedJsonFile<T> {
  readonly path: string;
  readonly #db: Low<string>;
  readonly #options: CachedJsonFileOptions<T>;
  #cache: { identity: FileIdentity; text: string; data: T } | null = null;

  constructor(path: string, options: CachedJsonFileOptions<T>) {
    this.path = path;
    this.#db = new Low(new TextFile(path), '');
    this.#options = options;
  }

  /**
   * The current document (shared with the cache: a caller that mutates it must `write` or
   * `forget`). With `locked`, a file that cannot be parsed is moved aside (`<file>.corrupt-<time>`)
   * rather than left to be overwritten; without the lock it is only reported.
   */
  async read(locked: boolean): Promise<T> {
    const identity = await this.#identity();
    if (identity === null) {
      this.#cache = null;
      return this.#options.empty();
    }
    if (this.#cache && sameFile(this.#cache.identity, identity)) return this.#cache.data;

    this.#db.data = '';
    await this.#db.read();
    const text = this.#db.data;
    const parsed = this.#parse(text);
    if (typeof parsed === 'string') {
      if (locked) await this.#setAside(parsed);
      else this.#options.warn(`${this.path} ${parsed}; it will be set aside at the next write`);
      this.#cache = null;
      return this.#options.empty();
    }
    // The identity was taken before the read: if the file changed in between, the next read re-parses.
    this.#cache = { identity, text, data: parsed };
    return parsed;
  }

  /**
   * Persist `data` unless it serialises to exactly what is on disk. Call it only after a `read`
   * under the same lock, so the cache describes the file as it is now.
   */
  async write(data: T): Promise<void> {
    const text = this.#options.serialize(data);
    if (this.#cache && this.#cache.text === text) {
      this.#cache = { ...this.#cache, data };
      return;
    }
    this.#db.data = text;
    try {
      await this.#db.write();
    } catch (error) {
      this.#cache = null;
      throw error;
    }
    const identity = await this.#identity();
    this.#cache = identity ? { identity, text, data } : null;
  }

  /** Drop the cache (after a failed transaction that may have half-changed the cached document). */
  forget(): void {
    this.#cache = null;
  }

  #parse(text: string): T | string {
    if (text.trim() === '') return this.#options.empty();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return 'is not valid JSON';
    }
    try {
      const { data, dropped } = this.#options.parse(json);
      if (dropped.length > 0) {
        const noun = dropped.length === 1 ? 'entry' : 'entries';
        this.#options.warn(`${this.path}: dropped ${dropped.length} malformed ${noun}: ${dropped.slice(0, 5).join(', ')}`);
      }
      return data;
    } catch {
      return 'does not have the expected shape';
    }
  }

  async #setAside(why: string): Promise<void> {
    const aside = `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    try {
      await rename(this.path, aside);
      this.#options.warn(`${this.path} ${why}; moved it to ${aside} and started it afresh`);
    } catch (error) {
      this.#options.warn(`${this.path} ${why}, and could not be moved aside: ${(error as Error).message}`);
    }
  }

  async #identity(): Promise<FileIdentity | null> {
    try {
      const s = await stat(this.path, { bigint: true });
      return { ino: s.ino, size: s.size, mtimeNs: s.mtimeNs };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
}

function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs;
}
