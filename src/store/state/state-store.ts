import { constants } from 'node:fs';
import { access, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { TaskLedgerEntry } from '../../policy/task-ledger.js';
import { ensureDirSync } from '../../config/telemetry-dir.js';
import { StateFile } from './state-file.js';
import { StateLock } from './state-lock.js';
import { removeAbandonedTemps } from '../temp-files.js';
import { isStateStoreError, StateStoreError } from './state-store-error.js';
import { dict, type StateBackend, type StateData, type StoreWriteFailure, type TaskScope } from '../state-backend.js';
import { mainFileJson, parseMainFile, parseShardFile, type MainFile, type ShardFile } from './state-schema.js';

interface StateStoreOptions {
  /** Where problems that do not stop the server are reported (a corrupt file set aside, a lock taken over). */
  readonly onWarning?: (message: string) => void;
  /** A lock that stays the same this long is taken over, even from a live holder. @default 10000 */
  readonly staleLockMs?: number;
}

/** The task ledger is split into this many files, so a transaction's cost does not grow with the number of tasks. */
export const TASK_SHARDS = 64;

/**
 * The state shared by every server process on one telemetry dir: `state.json` (every model's
 * circuit, when the ledger was pruned) and `state.tasks/NN.json` (the task ledger, split into 64
 * shards by a hash of the task id), each one lowdb database (see `state-file.ts`).
 *
 * - `transact(scope, fn)` is exact across processes: under one cross-process lock
 *   (`state.json.lock`, see `state-lock.ts`) it reads the files it needs (`db.read()`), applies
 *   `fn`, and writes back (`db.write()`, atomic) only the files that changed. lowdb's own
 *   `update()` does no re-read and would lose updates between processes. Transactions of this
 *   process run one at a time, in call order; one that writes a task outside its scope fails.
 * - `snapshot(scope)` reads without the lock: writes are renames, so a reader never sees a torn file.
 */
export class StateStore implements StateBackend {
  readonly file: string;
  readonly #shardDir: string;
  readonly #main: StateFile<MainFile>;
  readonly #shards: StateFile<ShardFile>[];
  readonly #lock: StateLock;
  /** Settles when this process's last transaction so far is done. */
  #tail: Promise<unknown> = Promise.resolve();
  #writeFailure: StoreWriteFailure | null = null;
  #sweep: Promise<unknown> | null = null;

  /** @throws StateStoreError (one line, naming the path) when the shard dir cannot be created. */
  constructor(file: string, options: StateStoreOptions = {}) {
    this.file = path.resolve(file);
    this.#shardDir = path.join(path.dirname(this.file), `${path.basename(this.file, '.json')}.tasks`);
    try {
      ensureDirSync(this.#shardDir);
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      const why = code === 'EEXIST' || code === 'ENOTDIR' ? `a file is in the way (${message})` : message;
      throw new StateStoreError(`cannot use ${this.#shardDir} as the task ledger's directory: ${why}`, {
        step: 'setup',
        cause: error,
      });
    }
    const warn = options.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    this.#main = new StateFile(this.file, {
      parse: parseMainFile,
      empty: () => ({ breakers: dict(), prunedAt: 0, prunedAsOf: 0 }),
      toJson: mainFileJson,
      warn,
      contents: "every model's circuit breaker (open circuits are closed again)",
    });
    this.#shards = Array.from(
      { length: TASK_SHARDS },
      (_, index) =>
        new StateFile(path.join(this.#shardDir, `${index.toString(16).padStart(2, '0')}.json`), {
          parse: (json) => parseShardFile(json, (taskId) => shardOf(taskId) === index),
          empty: () => ({ tasks: dict() }),
          warn,
          contents: 'the retry ledger of the tasks in this shard (their retry counts restart at 0)',
        }),
    );
    const staleMs = options.staleLockMs ?? 10_000;
    this.#lock = new StateLock(`${this.file}.lock`, { guards: this.file, staleMs, maxWaitMs: staleMs + 5_000, warn });
  }

  async snapshot(scope: TaskScope = []): Promise<StateData> {
    return (await this.#load(scope, 'peek')).state;
  }

  get lastWriteFailure(): StoreWriteFailure | null {
    return this.#writeFailure;
  }

  /** One line per file the store cannot read and write, naming the path and the error. */
  async inspect(): Promise<string[]> {
    const problems: string[] = [];
    const check = async (target: string, kind: 'file' | 'dir') => {
      try {
        const info = await stat(target);
        if (kind === 'file' && !info.isFile()) return void problems.push(`${target} is not a regular file`);
        if (kind === 'dir' && !info.isDirectory()) return void problems.push(`${target} is not a directory`);
        await access(target, constants.R_OK | constants.W_OK | (kind === 'dir' ? constants.X_OK : 0));
        if (kind === 'file') await readFile(target);
      } catch (error) {
        const { code, message } = error as NodeJS.ErrnoException;
        if (code === 'ENOENT' && kind === 'file') return;
        problems.push(`${target}: ${code ?? message}`);
      }
    };
    await check(path.dirname(this.file), 'dir');
    await check(this.file, 'file');
    await check(this.#shardDir, 'dir');
    const names = await readdir(this.#shardDir).catch(() => []); // an unreadable dir is reported above
    const shards = names.filter((name) => /^[0-9a-f]{2}\.json$/.test(name));
    await Promise.all(shards.map((name) => check(path.join(this.#shardDir, name), 'file')));
    return [...new Set(problems)];
  }

  transact<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    // Once: the temp files of the state files and of the lock that a process killed mid-write left.
    this.#sweep ??= Promise.all([
      removeAbandonedTemps(path.dirname(this.file), path.basename(this.file)),
      removeAbandonedTemps(this.#shardDir),
    ]);
    const turn = this.#tail.then(() => this.#transactLocked(scope, fn));
    this.#tail = turn.catch(() => {});
    return turn;
  }

  async #transactLocked<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    try {
      const release = await this.#lock.acquire();
      try {
        const result = await this.#apply(scope, fn);
        this.#writeFailure = null;
        return result;
      } finally {
        await release();
      }
    } catch (error) {
      const failure = asStoreError(error, this.file);
      if (isStateStoreError(failure)) this.#writeFailure = { at: Date.now(), message: failure.message };
      throw failure;
    }
  }

  /** Under the lock: read the files of the scope, apply `fn`, write the files it changed. */
  async #apply<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    const { indexes, state } = await this.#load(scope, 'read');
    const files = indexes.map((index) => this.#shards[index]!);
    const result = fn(state);
    this.#main.db.data = { breakers: state.breakers, prunedAt: state.prunedAt, prunedAsOf: state.prunedAsOf };
    // Every shard is rewritten from the state (`all`), or each task of the scope in its own.
    if (scope === 'all') for (const file of files) file.db.data = { tasks: dict() };
    else checkScope(state.tasks, scope);
    for (const taskId of scope === 'all' ? Object.keys(state.tasks) : scope) {
      const { tasks } = this.#shards[shardOf(taskId)]!.db.data;
      if (Object.hasOwn(state.tasks, taskId)) tasks[taskId] = state.tasks[taskId]!;
      else delete tasks[taskId];
    }
    await this.#main.save();
    await Promise.all(files.map((file) => file.save()));
    return result;
  }

  /** The circuits and the tasks of `scope` from their files: `peek`ed, or `read` under the lock. */
  async #load(scope: TaskScope, how: 'peek' | 'read'): Promise<{ indexes: number[]; state: StateData }> {
    const indexes = shardIndexesOf(scope);
    const [main, shards] = await Promise.all([
      this.#main[how](),
      Promise.all(indexes.map((index) => this.#shards[index]![how]())),
    ]);
    return { indexes, state: { ...main, tasks: tasksOf(scope, indexes, shards) } };
  }
}

/** The shards a scope reads, in order. */
function shardIndexesOf(scope: TaskScope): number[] {
  return scope === 'all' ? Array.from({ length: TASK_SHARDS }, (_, index) => index) : [...new Set(scope.map(shardOf))];
}

/** The tasks of the scope found in its shards (`shards[i]` is shard `indexes[i]`), as a new map. */
function tasksOf(scope: TaskScope, indexes: readonly number[], shards: readonly ShardFile[]): StateData['tasks'] {
  const tasks = dict<TaskLedgerEntry>();
  if (scope === 'all') {
    for (const shard of shards) Object.assign(tasks, shard.tasks);
    return tasks;
  }
  for (const taskId of scope) {
    const entry = shards[indexes.indexOf(shardOf(taskId))]!.tasks[taskId];
    if (entry !== undefined) tasks[taskId] = entry;
  }
  return tasks;
}

/** A file-system error as a StateStoreError; errors of `fn` itself (no errno code) stay the caller's. */
function asStoreError(error: unknown, file: string): unknown {
  if (isStateStoreError(error) || !(error as NodeJS.ErrnoException).code) return error;
  return new StateStoreError(`cannot update ${file}: ${(error as Error).message}`, { step: 'update', cause: error });
}

/** @throws StateStoreError when a transaction wrote a task outside its scope */
export function checkScope(tasks: StateData['tasks'], scope: readonly string[]): void {
  for (const taskId in tasks) {
    if (!scope.includes(taskId)) {
      throw new StateStoreError(`task ${JSON.stringify(taskId)} was written outside the transaction's scope`, { step: 'update' });
    }
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
