import { mkdir, open, readdir, stat, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import type { RetentionClockFile } from '../../telemetry/retention-clock.js';
import { planAnswerRetention, type AnswerFileFacts, type AnswerRetentionLimits } from './answer-retention.js';
import { freeBytes, MIN_RESERVE_BYTES } from './disk-room.js';

/** A text kept whole in a file because the reply could not carry all of it. */
export interface SavedText {
  readonly path: string;
  readonly chars: number;
  readonly bytes: number;
}

interface AnswerFilesOptions {
  /** The folder: `answers/` in the telemetry dir. */
  readonly dir: string;
  /** A file is never deleted within this time of the last reply that named it. @default 1 hour */
  readonly graceMs?: number;
  /** Files kept past their grace at most; the oldest go first. @default 100 */
  readonly maxFiles?: number;
  /** Bytes kept past their grace at most, all such files together. @default 1 GiB */
  readonly maxBytes?: number;
  /** A file past its grace and older than this is removed. @default 7 days */
  readonly maxAgeMs?: number;
  /** Epoch ms. @default Date.now */
  readonly clock?: () => number;
  /** The retention clock shared with the run log, which ages are judged by. @default none: `clock` */
  readonly retentionClock?: Pick<RetentionClockFile, 'tick'> | null;
  /** Bytes a save must leave free on the disk, for the ledger and runs.jsonl. @default 64 MiB */
  readonly reserve?: () => Promise<number>;
  /** Bytes free on the disk holding a dir, null when unknown. @default statfs */
  readonly freeBytes?: (dir: string) => Promise<number | null>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A file whose reply is never built (a bug, or a call that never ends) is held no longer than this. */
const MAX_HOLD_MS = DAY_MS;

/**
 * Answers too large for a reply, kept whole where the caller can read them: one file per text,
 * readable by its owner only (0600, in a 0700 folder). Several server processes may share the folder.
 *
 * A file is never deleted within `graceMs` of the reply that names it: it is held while the reply
 * is built (a batch's reply waits for its last job) and dated again when it is built (`replied`).
 * Every save first prunes the files past their grace (at most `maxFiles` files, `maxBytes` bytes,
 * none older than `maxAgeMs`, newest kept first) and refuses to take the room the ledger needs.
 */
export class AnswerFiles {
  readonly #dir: string;
  readonly #limits: AnswerRetentionLimits;
  readonly #clock: () => number;
  readonly #retentionClock: Pick<RetentionClockFile, 'tick'> | null;
  readonly #reserve: () => Promise<number>;
  readonly #freeBytes: (dir: string) => Promise<number | null>;
  /** Files saved by this process whose reply is not built yet, and when each was saved. */
  readonly #held = new Map<string, number>();
  #refresher: NodeJS.Timeout | null = null;

  constructor(options: AnswerFilesOptions) {
    this.#dir = path.resolve(options.dir);
    this.#limits = {
      graceMs: options.graceMs ?? HOUR_MS,
      maxFiles: options.maxFiles ?? 100,
      maxBytes: options.maxBytes ?? 1024 * 1024 * 1024,
      maxAgeMs: options.maxAgeMs ?? 7 * DAY_MS,
    };
    this.#clock = options.clock ?? Date.now;
    this.#retentionClock = options.retentionClock ?? null;
    this.#reserve = options.reserve ?? (() => Promise.resolve(MIN_RESERVE_BYTES));
    this.#freeBytes = options.freeBytes ?? freeBytes;
  }

  /**
   * Write `text` to `<dir>/<name>` (a new file), held until `replied` names it. Throws when it cannot:
   * a name that is not a plain `.txt` name, a file that exists, a disk without room for it and the
   * reserve, or a failed write (whose partial file is removed at once).
   */
  async save(name: string, text: string): Promise<SavedText> {
    if (path.basename(name) !== name || !name.endsWith('.txt')) throw new Error(`not a plain .txt file name: ${name}`);
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    await this.#prune().catch(() => {
      // Retention is best effort: another process may be pruning the same files.
    });
    const data = Buffer.from(text, 'utf8');
    await this.#checkRoom(data.length);
    const file = path.join(this.#dir, name);
    await writeNew(file, data);
    const now = this.#clock();
    await utimes(file, now / 1000, now / 1000).catch(() => {});
    this.#hold(name, now);
    return { path: file, chars: text.length, bytes: data.length };
  }

  /** The reply naming these files is built: their grace counts from now, in every process. */
  async replied(paths: readonly string[]): Promise<void> {
    const names = paths.filter((file) => path.dirname(file) === this.#dir).map((file) => path.basename(file));
    const now = this.#clock();
    await Promise.all(names.map((name) => utimes(path.join(this.#dir, name), now / 1000, now / 1000).catch(() => {})));
    for (const name of names) this.#held.delete(name);
    this.#stopRefresherIfIdle();
  }

  /** Date the held files now, so no other process's prune finds them past their grace. */
  async refreshHeld(): Promise<void> {
    const now = this.#clock();
    for (const [name, since] of this.#held) if (now - since > MAX_HOLD_MS) this.#held.delete(name);
    const names = [...this.#held.keys()];
    await Promise.all(names.map((name) => utimes(path.join(this.#dir, name), now / 1000, now / 1000).catch(() => {})));
    this.#stopRefresherIfIdle();
  }

  #hold(name: string, now: number): void {
    this.#held.set(name, now);
    if (this.#refresher !== null) return;
    // Well within the grace, so another process never sees a held file past it.
    this.#refresher = setInterval(() => void this.refreshHeld(), this.#limits.graceMs / 4);
    this.#refresher.unref();
  }

  #stopRefresherIfIdle(): void {
    if (this.#held.size > 0 || this.#refresher === null) return;
    clearInterval(this.#refresher);
    this.#refresher = null;
  }

  /** Refuse a file that would leave the disk less than the reserve (the ledger must stay writable). */
  async #checkRoom(bytes: number): Promise<void> {
    const free = await this.#freeBytes(this.#dir);
    if (free === null) return;
    const reserve = await this.#reserve();
    if (free - bytes >= reserve) return;
    throw new Error(
      `only ${mebibytes(free)} free on the disk, and ${mebibytes(reserve)} are kept for the retry ledger and runs.jsonl`,
    );
  }

  async #prune(): Promise<void> {
    const names = (await readdir(this.#dir)).filter((name) => name.endsWith('.txt'));
    const facts = await Promise.all(names.map((name) => this.#factsOf(name)));
    const now = this.#clock();
    const asOf = this.#retentionClock === null ? now : await this.#retentionClock.tick(now);
    const files = facts.filter((file) => file !== null);
    const plan = planAnswerRetention(files, { now, asOf }, this.#limits, new Set(this.#held.keys()));
    const at = (name: string) => path.join(this.#dir, name);
    await Promise.all(plan.redate.map((name) => utimes(at(name), now / 1000, now / 1000).catch(() => {})));
    await Promise.all(plan.remove.map((name) => unlink(at(name)).catch(() => {})));
  }

  async #factsOf(name: string): Promise<AnswerFileFacts | null> {
    const info = await stat(path.join(this.#dir, name)).catch(() => null);
    return info?.isFile() ? { name, mtimeMs: info.mtimeMs, size: info.size } : null;
  }
}

/** Write a new file whole, or leave nothing: a write that fails (a full disk) removes its partial file at once. */
async function writeNew(file: string, data: Buffer): Promise<void> {
  const handle = await open(file, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(file).catch(() => {});
    throw error;
  }
}

function mebibytes(bytes: number): string {
  return `${(Math.max(0, bytes) / 1024 / 1024).toFixed(1)} MiB`;
}
