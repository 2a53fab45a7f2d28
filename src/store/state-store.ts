import { mkdirSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { CachedJsonFile } from './cached-json-file.js';
import {
  parseMainFile,
  parseShardFile,
  serializeMainFile,
  serializeShardFile,
  type MainFile,
  type ShardFile,
  type StateData,
} from './state-schema.js';

export interface StateStoreOptions {
  /** Where problems that do not stop the server are reported (a corrupt file set aside, a lost lock). */
  readonly onWarning?: (message: string) => void;
  /** A lock held longer than this by a process that stopped updating it is taken over. @default 10000 */
  readonly staleLockMs?: number;
}

/** Thrown when the state cannot be locked, read or written. */
export class StateStoreError extends Error {
  readonly kind = 'state_store_error';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StateStoreError';
  }
}

/** The task ledger is split into this many files, so a transaction's cost does not grow with the number of tasks. */
export const TASK_SHARDS = 64;

/** Which tasks a transaction reads and writes: the ids it touches, or every task (pruning). */
export type TaskScope = readonly string[] | 'all';

/**
 * The state shared by every server process on one telemetry dir:
 * `state.json` (every model's circuit) and `state.tasks/NN.json` (the task ledger, split into
 * 64 shards by a hash of the task id).
 *
 * - `transact(scope, fn)` is exact across processes: under one cross-process lock
 *   (proper-lockfile) it reads the files it needs fresh, applies `fn`, and writes back only the
 *   files that changed, atomically. (lowdb's own `update()` does no re-read and loses updates
 *   between processes; see shared/files-across-processes.md.)
 * - `snapshot(scope)` reads without the lock: writes are renames, so a reader never sees a torn file.
 * - Parsed files are cached against their inode, size and mtime: with 10,000 tasks a transaction
 *   parses and writes one small shard, not the whole ledger.
 * - A file that is not valid JSON is moved aside (`<file>.corrupt-<time>`), never overwritten.
 */
export class StateStore {
  /** `state.json`. */
  readonly file: string;
  readonly #main: CachedJsonFile<MainFile>;
  readonly #shards: CachedJsonFile<ShardFile>[];
  readonly #lockPath: string;
  readonly #staleLockMs: number;
  readonly #warn: (message: string) => void;
  #queue: Promise<void> = Promise.resolve();

  constructor(file: string, options: StateStoreOptions = {}) {
    this.file = path.resolve(file);
    const shardDir = path.join(path.dirname(this.file), `${path.basename(this.file, '.json')}.tasks`);
    mkdirSync(shardDir, { recursive: true });
    this.#warn = options.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    const warn = this.#warn;
    this.#main = new CachedJsonFile(this.file, {
      parse: parseMainFile,
      serialize: serializeMainFile,
      empty: () => ({ breakers: {}, prunedAt: 0 }),
      warn,
    });
    this.#shards = Array.from(
      { length: TASK_SHARDS },
      (_, index) =>
        new CachedJsonFile(path.join(shardDir, `${index.toString(16).padStart(2, '0')}.json`), {
          parse: parseShardFile,
          serialize: serializeShardFile,
          empty: () => ({ tasks: {} }),
          warn,
        }),
    );
    this.#lockPath = `${this.file}.lock`;
    this.#staleLockMs = options.staleLockMs ?? 10_000;
  }

  /**
   * The state of the circuits and of the tasks in `scope`, read without the lock.
   * Treat it as read-only and do not keep it.
   */
  async snapshot(scope: TaskScope = []): Promise<StateData> {
    return (await this.#load(scope, false)).state;
  }

  /**
   * Apply `fn` to the latest state under the cross-process lock and persist what it changed.
   * `fn` sees every circuit and the tasks in `scope` (tasks outside it are absent, and writing
   * them is an error). It mutates the state it is given and returns a value for the caller; it
   * must be synchronous and do no I/O (the lock is held while it runs).
   */
  async transact<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    // One transaction at a time within this process: concurrent runs of one server then queue
    // here in order instead of sleeping in proper-lockfile's retry backoff against each other.
    const turn = this.#queue.then(() => this.#transactLocked(scope, fn));
    this.#queue = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  async #transactLocked<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    let release: () => Promise<void>;
    try {
      release = await lockfile.lock(this.file, {
        realpath: false,
        lockfilePath: this.#lockPath,
        stale: this.#staleLockMs,
        retries: { retries: 1000, factor: 1.2, minTimeout: 1, maxTimeout: 25, randomize: true },
        onCompromised: (error) => this.#warn(`state lock was lost while held (${error.message}); continuing`),
      });
    } catch (error) {
      throw new StateStoreError(`cannot lock ${this.file}: ${(error as Error).message}`, { cause: error });
    }
    try {
      const { state, shardIndexes } = await this.#load(scope, true);
      let result: T;
      try {
        result = fn(state);
      } catch (error) {
        this.#forget(shardIndexes); // fn may have half-changed cached documents
        throw error;
      }
      await this.#save(state, shardIndexes);
      return result;
    } catch (error) {
      if (error instanceof StateStoreError || !(error as NodeJS.ErrnoException).code) throw error;
      throw new StateStoreError(`cannot update ${this.file}: ${(error as Error).message}`, { cause: error });
    } finally {
      await release().catch((error: Error) => this.#warn(`could not release the state lock: ${error.message}`));
    }
  }

  async #load(scope: TaskScope, locked: boolean): Promise<{ state: StateData; shardIndexes: number[] }> {
    const shardIndexes = scope === 'all' ? this.#shards.map((_, index) => index) : [...new Set(scope.map(shardOf))];
    const [main, ...shards] = await Promise.all([
      this.#main.read(locked),
      ...shardIndexes.map((index) => this.#shards[index]!.read(locked)),
    ]);
    const tasks: StateData['tasks'] = {};
    for (const shard of shards) Object.assign(tasks, shard.tasks);
    return { state: { tasks, breakers: main!.breakers, prunedAt: main!.prunedAt }, shardIndexes };
  }

  async #save(state: StateData, shardIndexes: readonly number[]): Promise<void> {
    const byShard = new Map<number, ShardFile>(shardIndexes.map((index) => [index, { tasks: {} }]));
    for (const [taskId, entry] of Object.entries(state.tasks)) {
      const shard = byShard.get(shardOf(taskId));
      if (!shard) throw new StateStoreError(`task ${JSON.stringify(taskId)} was written outside the transaction's scope`);
      shard.tasks[taskId] = entry;
    }
    await Promise.all([
      this.#main.write({ breakers: state.breakers, prunedAt: state.prunedAt }),
      ...[...byShard].map(([index, shard]) => this.#shards[index]!.write(shard)),
    ]);
  }

  #forget(shardIndexes: readonly number[]): void {
    this.#main.forget();
    for (const index of shardIndexes) this.#shards[index]!.forget();
  }
}

/** FNV-1a of the task id, folded onto the shard count. */
export function shardOf(taskId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i += 1) {
    hash ^= taskId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % TASK_SHARDS;
}
