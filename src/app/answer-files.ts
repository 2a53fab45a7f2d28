import { mkdir, readdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A text kept whole in a file because the reply could not carry all of it. */
export interface SavedText {
  readonly path: string;
  readonly chars: number;
  readonly bytes: number;
}

export interface AnswerFilesOptions {
  /** The folder: `answers/` in the telemetry dir. */
  readonly dir: string;
  /** Files kept at most; the oldest go first. @default 100 */
  readonly maxFiles?: number;
  /** Bytes kept at most, all files together. @default 1 GiB */
  readonly maxBytes?: number;
  /** A file older than this is removed. @default 7 days */
  readonly maxAgeMs?: number;
  /** Epoch ms. @default Date.now */
  readonly clock?: () => number;
}

const DAY_MS = 86_400_000;

/**
 * Answers too large for a reply, kept whole where the caller can read them: one file per text,
 * readable by its owner only (0600, in a 0700 folder). Every save applies the retention rule
 * (at most `maxFiles` files, `maxBytes` bytes, none older than `maxAgeMs`), newest kept first, so
 * the folder cannot grow without bound; several server processes may share it.
 */
export class AnswerFiles {
  readonly #dir: string;
  readonly #maxFiles: number;
  readonly #maxBytes: number;
  readonly #maxAgeMs: number;
  readonly #clock: () => number;

  constructor(options: AnswerFilesOptions) {
    this.#dir = options.dir;
    this.#maxFiles = options.maxFiles ?? 100;
    this.#maxBytes = options.maxBytes ?? 1024 * 1024 * 1024;
    this.#maxAgeMs = options.maxAgeMs ?? 7 * DAY_MS;
    this.#clock = options.clock ?? Date.now;
  }

  get dir(): string {
    return this.#dir;
  }

  /** Write `text` to `<dir>/<name>` (a new file; throws when it cannot), then prune the older files. */
  async save(name: string, text: string): Promise<SavedText> {
    if (path.basename(name) !== name || !name.endsWith('.txt')) throw new Error(`not a plain .txt file name: ${name}`);
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const file = path.join(this.#dir, name);
    const data = Buffer.from(text, 'utf8');
    await writeFile(file, data, { mode: 0o600, flag: 'wx' });
    await this.#prune(name).catch(() => {
      // Retention is best effort: another process may be pruning the same files.
    });
    return { path: file, chars: text.length, bytes: data.length };
  }

  async #prune(keep: string): Promise<void> {
    const names = (await readdir(this.#dir)).filter((name) => name.endsWith('.txt') && name !== keep);
    const files = await Promise.all(
      names.map(async (name) => {
        const info = await stat(path.join(this.#dir, name)).catch(() => null);
        return info?.isFile() ? { name, mtimeMs: info.mtimeMs, size: info.size } : null;
      }),
    );
    const now = this.#clock();
    const newestFirst = files.filter((file) => file !== null).sort((a, b) => b.mtimeMs - a.mtimeMs);
    let kept = 1; // the file just saved
    let bytes = 0;
    for (const file of newestFirst) {
      const keepIt = kept < this.#maxFiles && bytes + file.size <= this.#maxBytes && now - file.mtimeMs <= this.#maxAgeMs;
      if (keepIt) {
        kept += 1;
        bytes += file.size;
      } else {
        await unlink(path.join(this.#dir, file.name)).catch(() => {});
      }
    }
  }
}
