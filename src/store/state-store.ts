import { constants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { CachedJsonFile } from './cached-json-file.js';
import { DirLock, sleepSync } from './dir-lock.js';
import { ensureDirSync } from './durable-fs.js';
import { CONTENDED, nextLockAttempt } from './lock-policy.js';
import { ShardText } from './shard-text.js';
import { isStateStoreError, StateStoreError } from './state-store-error.js';
import {
  dict,
  parseMainFile,
  parseShardFile,
  serializeMainFile,
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

export { isStateStoreError, StateStoreError };

/** The last transaction that could not be saved, while no later one was. */
export interface StoreWriteFailure {
  /** Epoch ms. */
  readonly at: number;
  readonly message: string;
}

/** The task ledger is split into this many files, so a transaction's cost does not grow with the number of tasks. */
export const TASK_SHARDS = 64;

/**
 * How long a contended lock is waited for with the thread blocked (jittered sleeps of 0.1-2 ms)
 * before the wait yields to the event loop. A holder keeps the lock ~1 ms, so this usually ends
 * the wait within the turn; it bounds how long one transaction can stall the server.
 */
const BLOCKING_WAIT_MS = 25;

/** A lock attempt that found the lock held past {@link BLOCKING_WAIT_MS}: wait, then try again. */
interface Contended {
  /** `performance.now()` of the first attempt. */
  readonly started: number;
  /** Attempts made so far. */
  readonly attempt: number;
  readonly retryInMs: number;
}

/** Which tasks a transaction reads and writes: the ids it touches, or every task (pruning). */
export type TaskScope = readonly string[] | 'all';

/**
 * The state shared by every server process on one telemetry dir:
 * `state.json` (every model's circuit) and `state.tasks/NN.json` (the task ledger, split into
 * 64 shards by a hash of the task id).
 *
 * - `transact(scope, fn)` is exact across processes: under one cross-process lock (the file
 *   `state.json.lock`, created exclusively; older servers' lock dir excludes too: see `dir-lock.ts`) it reads the files it
 *   needs fresh, applies `fn`, and writes back only the files that changed, atomically. (lowdb's
 *   own `update()` does no re-read and loses updates between processes.) Lock, reads, `fn`, writes and unlock run synchronously, in
 *   one event-loop turn (~1 ms): nothing else in this process can interleave, and the lock is
 *   held for the shortest time. Only a lock held by another process for longer than
 *   {@link BLOCKING_WAIT_MS} makes a transaction yield and wait.
 * - `snapshot(scope)` reads without the lock: writes are renames, so a reader never sees a torn file.
 * - Parsed files are cached against their inode, size and mtime: with 10,000 tasks a transaction
 *   parses and writes one small shard, not the whole ledger. A file this process wrote itself is
 *   not parsed or validated again (its identity is taken from the written descriptor); one that
 *   changed on disk (another process, a hand edit) is. `fn` gets only the tasks of its scope;
 *   the entries it changed are applied to their shard's cached document and spliced into its
 *   text (`shard-text.ts`), so a run's transaction serialises one entry, not the shard's ~150.
 * - A file that is not valid JSON is moved aside (`<file>.corrupt-<time>`), never overwritten.
 */
export class StateStore {
  /** `state.json`. */
  readonly file: string;
  readonly #main: CachedJsonFile<MainFile>;
  readonly #shards: CachedJsonFile<ShardFile>[];
  /** Each shard's text maker: it patches or reuses the text of unchanged entries. */
  readonly #shardTexts: ShardText[] = [];
  readonly #lock: DirLock;
  readonly #staleLockMs: number;
  readonly #warn: (message: string) => void;
  /** Transactions of this process waiting (without blocking) for a contended lock, in order. */
  #queue: Promise<void> | null = null;
  #writeFailure: StoreWriteFailure | null = null;
  /** `state.tasks`: the ledger shards. */
  readonly shardDir: string;

  /** @throws StateStoreError (one line, naming the path) when the shard dir cannot be created. */
  constructor(file: string, options: StateStoreOptions = {}) {
    this.file = path.resolve(file);
    const shardDir = path.join(path.dirname(this.file), `${path.basename(this.file, '.json')}.tasks`);
    this.shardDir = shardDir;
    try {
      ensureDirSync(shardDir);
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      const why = code === 'EEXIST' || code === 'ENOTDIR' ? `a file is in the way (${message})` : message;
      throw new StateStoreError(`cannot use ${shardDir} as the task ledger's directory: ${why}`, { step: 'setup', cause: error });
    }
    this.#warn = options.onWarning ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    const warn = this.#warn;
    this.#main = new CachedJsonFile(this.file, {
      parse: parseMainFile,
      serialize: serializeMainFile,
      empty: () => ({ breakers: dict(), prunedAt: 0 }),
      warn,
      contents: "every model's circuit breaker (open circuits are closed again)",
    });
    this.#shards = Array.from({ length: TASK_SHARDS }, (_, index) => {
      const text = new ShardText();
      this.#shardTexts.push(text);
      return new CachedJsonFile(path.join(shardDir, `${index.toString(16).padStart(2, '0')}.json`), {
        parse: (json) => parseShardFile(json, (taskId) => shardOf(taskId) === index),
        serialize: (shard) => text.serialize(shard.tasks),
        empty: () => ({ tasks: dict() }),
        warn,
        contents: 'the retry ledger of the tasks in this shard (their retry counts restart at 0)',
      });
    });
    this.#staleLockMs = options.staleLockMs ?? 10_000;
    this.#lock = new DirLock(`${this.file}.lock`, this.#staleLockMs);
  }

  /**
   * The state of the circuits and of the tasks in `scope`, read without the lock.
   * Treat it as read-only and do not keep it.
   */
  async snapshot(scope: TaskScope = []): Promise<StateData> {
    return this.#load(scope, false).state;
  }

  /** Set when the last transaction could not be saved (cleared by the next one that is). */
  get lastWriteFailure(): StoreWriteFailure | null {
    return this.#writeFailure;
  }

  /**
   * Can every file the store needs be read and written? One line per problem, naming the path
   * and the error (an unreadable shard, a directory where a file should be, a read-only dir).
   */
  async inspect(): Promise<string[]> {
    const problems: string[] = [];
    const check = async (target: string, kind: 'file' | 'dir', optional: boolean) => {
      try {
        const info = await stat(target);
        if (kind === 'file' && !info.isFile()) return void problems.push(`${target} is not a regular file`);
        if (kind === 'dir' && !info.isDirectory()) return void problems.push(`${target} is not a directory`);
        await access(target, constants.R_OK | constants.W_OK | (kind === 'dir' ? constants.X_OK : 0));
      } catch (error) {
        const { code, message } = error as NodeJS.ErrnoException;
        if (code === 'ENOENT' && optional) return;
        problems.push(`${target}: ${code ?? message}`);
      }
    };
    await check(path.dirname(this.file), 'dir', false);
    await check(this.file, 'file', true);
    await check(this.shardDir, 'dir', false);
    let names: string[] = [];
    try {
      names = (await readdir(this.shardDir)).filter((name) => /^[0-9a-f]{2}\.json$/.test(name));
    } catch {
      // already reported by the dir check
    }
    await Promise.all(names.map((name) => check(path.join(this.shardDir, name), 'file', true)));
    for (const shard of this.#shards) {
      if (!names.includes(path.basename(shard.path))) continue;
      try {
        shard.read(false);
      } catch (error) {
        problems.push(`${shard.path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
    }
    return [...new Set(problems)];
  }

  /**
   * Apply `fn` to the latest state under the cross-process lock and persist what it changed.
   * `fn` sees every circuit and the tasks in `scope` (tasks outside it are absent, and writing
   * them is an error). It mutates the state it is given and returns a value for the caller; it
   * must be synchronous and do no I/O (the lock is held while it runs).
   *
   * The work is done before this returns, unless the lock was contended past a short blocking
   * wait; the Promise only carries the outcome (callers `await` it either way).
   */
  transact<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    // Transactions of this process already waiting go first: keep the order of the calls.
    if (this.#queue !== null) return this.#enqueue(() => this.#transactAfterWait(scope, fn, null));
    let contended: Contended;
    try {
      const acquired = this.#acquire(performance.now(), 1);
      if (acquired === 'locked') {
        const result = this.#transactLocked(scope, fn);
        this.#writeFailure = null;
        return Promise.resolve(result);
      }
      contended = acquired;
    } catch (error) {
      this.#noteFailure(error);
      return Promise.reject(error as Error);
    }
    return this.#enqueue(() => this.#transactAfterWait(scope, fn, contended));
  }

  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    const turn = (this.#queue ?? Promise.resolve()).then(work);
    const tail = turn.then(
      () => undefined,
      () => undefined,
    );
    this.#queue = tail;
    void tail.then(() => {
      if (this.#queue === tail) this.#queue = null;
    });
    return turn;
  }

  async #transactAfterWait<T>(scope: TaskScope, fn: (state: StateData) => T, contended: Contended | null): Promise<T> {
    try {
      let wait = contended ?? { started: performance.now(), attempt: 0, retryInMs: 0 };
      for (;;) {
        if (wait.retryInMs > 0) await delay(wait.retryInMs);
        const acquired = this.#acquire(wait.started, wait.attempt + 1);
        if (acquired === 'locked') break;
        wait = acquired;
      }
      const result = this.#transactLocked(scope, fn);
      this.#writeFailure = null;
      return result;
    } catch (error) {
      this.#noteFailure(error);
      throw error;
    }
  }

  #noteFailure(error: unknown): void {
    if (isStateStoreError(error)) this.#writeFailure = { at: Date.now(), message: error.message };
  }

  /**
   * Take the cross-process lock, waiting with the thread blocked while that stays short. Returns
   * `'locked'`, or how to go on waiting without blocking. Contention waits (bounded: a crashed
   * holder's lock goes stale sooner); an error that waiting cannot cure (EROFS, EACCES,
   * ENOSPC...) fails at once.
   */
  #acquire(started: number, firstAttempt: number): 'locked' | Contended {
    for (let attempt = firstAttempt; ; attempt += 1) {
      let failure: NodeJS.ErrnoException | undefined;
      try {
        if (this.#lock.tryAcquire()) return 'locked';
      } catch (error) {
        failure = error as NodeJS.ErrnoException;
      }
      const elapsedMs = performance.now() - started;
      const next = nextLockAttempt(
        { code: failure ? failure.code : CONTENDED, attempt, elapsedMs },
        { maxWaitMs: this.#staleLockMs + 5_000, blockingMs: BLOCKING_WAIT_MS },
        Math.random(),
      );
      if (next === 'give_up') {
        const why = failure?.message ?? `${this.#lock.path} is held by a live process (waited ${Math.round(elapsedMs)} ms)`;
        throw new StateStoreError(`cannot lock ${this.file}: ${why}`, { step: 'lock', cause: failure });
      }
      if (!next.blocking) return { started, attempt, retryInMs: next.retryInMs };
      sleepSync(next.retryInMs);
    }
  }

  /** Under the lock, which it releases: read, apply `fn`, write. Synchronous from end to end. */
  #transactLocked<T>(scope: TaskScope, fn: (state: StateData) => T): T {
    try {
      const loaded = this.#load(scope, true);
      let result: T;
      try {
        result = fn(loaded.state);
        this.#save(loaded);
      } catch (error) {
        // fn may have half-changed the circuits' cached document (fn sees it, not a copy), and a
        // failed save the shards' (a failed write already dropped its own file's cache).
        this.#forget(loaded.shardIndexes);
        throw error;
      }
      return result;
    } catch (error) {
      if (error instanceof StateStoreError || !(error as NodeJS.ErrnoException).code) throw error;
      throw new StateStoreError(`cannot update ${this.file}: ${(error as Error).message}`, { step: 'update', cause: error });
    } finally {
      const warning = this.#lock.release();
      if (warning) this.#warn(warning);
    }
  }

  /**
   * The state `fn` (or a snapshot) sees: every circuit (the cached document itself), and the
   * tasks of the scope: for a list of ids, those of them that exist (a small map of the cached
   * entries, which are immutable); for 'all', a copy of every shard's tasks.
   */
  #load(scope: TaskScope, locked: boolean): Loaded {
    const main = this.#main.read(locked);
    const tasks = dict<StateData['tasks'][string]>();
    const shardIndexes = scope === 'all' ? this.#shards.map((_, index) => index) : [...new Set(scope.map(shardOf))];
    const shardTasks = new Map<number, StateData['tasks']>();
    for (const index of shardIndexes) shardTasks.set(index, this.#shards[index]!.read(locked).tasks);
    if (scope === 'all') {
      for (const ofShard of shardTasks.values()) for (const taskId in ofShard) tasks[taskId] = ofShard[taskId]!;
    } else {
      for (const taskId of scope) {
        const entry = shardTasks.get(shardOf(taskId))![taskId];
        if (entry !== undefined) tasks[taskId] = entry;
      }
    }
    return { state: { tasks, breakers: main.breakers, prunedAt: main.prunedAt }, scope, shardIndexes, shardTasks };
  }

  /**
   * Write what `fn` changed. For a list of ids, each id whose entry `fn` set, replaced or deleted
   * is applied to its shard's cached document, whose text is patched (not rebuilt), and only
   * shards with a change are written; writing any other task is refused before anything is written.
   */
  #save({ state, scope, shardIndexes, shardTasks }: Loaded): void {
    if (scope === 'all') {
      const byShard = new Map<number, ShardFile>(shardIndexes.map((index) => [index, { tasks: dict() }]));
      for (const taskId in state.tasks) byShard.get(shardOf(taskId))!.tasks[taskId] = state.tasks[taskId]!;
      this.#main.write({ breakers: state.breakers, prunedAt: state.prunedAt });
      for (const [index, shard] of byShard) this.#shards[index]!.write(shard);
      return;
    }
    const inScope = new Set(scope);
    for (const taskId of Object.keys(state.tasks)) if (!inScope.has(taskId)) throw outOfScope(taskId);
    const changes = new Map<number, string[]>();
    for (const taskId of inScope) {
      const index = shardOf(taskId);
      const entry = Object.hasOwn(state.tasks, taskId) ? state.tasks[taskId] : undefined;
      if (shardTasks.get(index)![taskId] === entry) continue;
      const changed = changes.get(index);
      if (changed) changed.push(taskId);
      else changes.set(index, [taskId]);
    }
    const texts: [number, string][] = [];
    for (const [index, changed] of changes) {
      const tasks = shardTasks.get(index)!;
      for (const taskId of changed) {
        const entry = Object.hasOwn(state.tasks, taskId) ? state.tasks[taskId] : undefined;
        if (entry === undefined) delete tasks[taskId];
        else tasks[taskId] = entry;
      }
      texts.push([index, this.#shardTexts[index]!.patch(tasks, changed)]);
    }
    this.#main.write({ breakers: state.breakers, prunedAt: state.prunedAt });
    for (const [index, text] of texts) this.#shards[index]!.write({ tasks: shardTasks.get(index)! }, text);
  }

  #forget(shardIndexes: readonly number[]): void {
    this.#main.forget();
    for (const index of shardIndexes) this.#shards[index]!.forget();
  }
}

/** What a transaction read: the state `fn` gets, and where its tasks came from. */
interface Loaded {
  readonly state: StateData;
  readonly scope: TaskScope;
  readonly shardIndexes: readonly number[];
  /** The cached task map of each shard read (the documents themselves, changed only by `#save`). */
  readonly shardTasks: ReadonlyMap<number, StateData['tasks']>;
}

function outOfScope(taskId: string): StateStoreError {
  return new StateStoreError(`task ${JSON.stringify(taskId)} was written outside the transaction's scope`, { step: 'update' });
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
