import { randomUUID } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { livenessOf } from '../policy/process-identity.js';
import { readTextIfAny, STATE_FILE_MODE } from './durable-fs.js';
import { parseHolder, type Holder } from './holder.js';
import { CONTENDED, judgeLock, nextLockAttempt, type HolderLiveness } from './lock-policy.js';
import { liveProcView, selfIdentity, type SelfIdentity } from './proc-reader.js';
import { StateStoreError } from './state-store-error.js';

export interface StateLockOptions {
  /** The file the lock guards (`state.json`), for messages. */
  readonly guards: string;
  /** A lock that stays the same this long is taken over, whoever holds it. */
  readonly staleMs: number;
  /** Waiting for a busy lock gives up after this long. */
  readonly maxWaitMs: number;
  /** Told when a lock is taken over, or this process's lock was. */
  readonly warn: (message: string) => void;
}

/** The lock file's content: who holds it, and a token naming this one acquisition. */
interface LockHolder extends Holder {
  readonly token: string;
}

/** Frees the lock. */
export type ReleaseLock = () => Promise<void>;

/** While waiting, the holder is judged at the first attempt, then at most this often (it reads /proc). */
const JUDGE_EVERY_MS = 100;

/**
 * The state's cross-process lock: the file `<state>.lock`, created exclusively (`wx`) with its
 * holder written in it, removed to release. Waiting backs off with jitter, never blocking the thread.
 *
 * A lock is judged by who holds it, never by its mtime (which a crash followed by a clock step
 * makes wrong, hence no proper-lockfile): one whose holder is gone is taken over at once; any other
 * (a live holder, one on another host, a file this server did not write) once it has stayed the
 * same for `staleMs` by this process's monotonic clock.
 */
export class StateLock {
  readonly path: string;
  readonly #options: StateLockOptions;
  readonly #identity: SelfIdentity = selfIdentity();
  /** The other holder's lock as first seen, and when (monotonic). */
  #seen: { readonly text: string; readonly since: number } | null = null;

  constructor(lockPath: string, options: StateLockOptions) {
    this.path = lockPath;
    this.#options = options;
  }

  /** Take the lock, waiting while another process has it. @throws StateStoreError (step `lock`) */
  async acquire(): Promise<ReleaseLock> {
    const started = performance.now();
    let heldBy = 'another process';
    let judgedAt = started;
    for (let attempt = 1; ; attempt += 1) {
      let failure: NodeJS.ErrnoException | undefined;
      let retryNow = false;
      try {
        const token = await this.#tryCreate();
        if (token !== null) return () => this.#release(token);
        if (attempt === 1 || performance.now() - judgedAt >= JUDGE_EVERY_MS) {
          judgedAt = performance.now();
          const judged = await this.#judgeHolder();
          if (judged === 'free') retryNow = true;
          else heldBy = judged;
        }
      } catch (error) {
        failure = error as NodeJS.ErrnoException;
      }
      const elapsedMs = performance.now() - started;
      const code = failure ? failure.code : CONTENDED;
      const next = nextLockAttempt({ code, attempt, elapsedMs }, this.#options.maxWaitMs, Math.random());
      if (next === 'give_up') {
        const why = failure?.message ?? `${this.path} is held by ${heldBy} (waited ${Math.round(elapsedMs)} ms)`;
        throw new StateStoreError(`cannot lock ${this.#options.guards}: ${why}`, { step: 'lock', cause: failure });
      }
      if (!retryNow) await delay(next.retryInMs);
    }
  }

  /** One attempt: the token of the lock now held, or null when another holder has it. */
  async #tryCreate(): Promise<string | null> {
    let handle;
    try {
      handle = await open(this.path, 'wx', STATE_FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === CONTENDED) return null;
      throw error;
    }
    const { self, place } = this.#identity;
    const holder: LockHolder = { pid: self.pid, start: self.start, ...place, at: Date.now(), token: randomUUID() };
    try {
      await handle.writeFile(JSON.stringify(holder));
      await handle.close();
    } catch (error) {
      // A lock that names nobody would be waited on for the stale time: remove it (a full disk).
      await handle.close().catch(() => {});
      await unlink(this.path).catch(() => {});
      throw error;
    }
    return holder.token;
  }

  /**
   * The lock is held: take it over when `judgeLock` says so (then `free`: try again at once), or
   * say who holds it, for the message if waiting gives up.
   */
  async #judgeHolder(): Promise<'free' | string> {
    const text = await readTextIfAny(this.path);
    if (text === null) return 'free'; // released meanwhile
    const now = performance.now();
    if (this.#seen?.text !== text) this.#seen = { text, since: now };
    const holder = parseHolder(text);
    const liveness: HolderLiveness = holder ? livenessOf(holder, this.#identity.place, liveProcView) : 'unreadable';
    const who = describeHolder(holder, liveness, this.#identity.place.host);
    if (judgeLock(liveness, now - this.#seen.since, this.#options.staleMs) === 'wait') return who;
    // Removed only if it is still the lock judged: another process may have taken it over meanwhile.
    if ((await readTextIfAny(this.path)) !== text) return 'free';
    await unlink(this.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    this.#seen = null;
    const unchanged = liveness === 'dead' ? '' : `, unchanged for over ${this.#options.staleMs} ms`;
    this.#options.warn(`the state lock ${this.path} was held by ${who}${unchanged}: taken over`);
    return 'free';
  }

  /** Remove the lock if it is still this acquisition's; say so if another process took it over meanwhile. */
  async #release(token: string): Promise<void> {
    try {
      const text = await readTextIfAny(this.path);
      const holder = text === null ? null : (parseHolder(text) as LockHolder | null);
      if (holder?.token === token) return await unlink(this.path);
      const by = holder ? `pid ${holder.pid}` : 'another process';
      this.#options.warn(
        `the state lock ${this.path} was taken over by ${by} while this server held it: an update may have been lost`,
      );
    } catch (error) {
      this.#options.warn(`could not release the state lock ${this.path}: ${(error as Error).message}`);
    }
  }
}

/** Who holds a lock, in words: `pid 12 (running)`, `pid 12 on box-b (cannot be checked from here)`... */
function describeHolder(holder: Holder | null, liveness: HolderLiveness, here: string): string {
  if (holder === null) return 'a process this server cannot name (the file does not hold a holder it writes)';
  const where = holder.host === here ? '' : ` on ${JSON.stringify(holder.host)}`;
  const state = liveness === 'alive' ? 'running' : liveness === 'dead' ? 'gone' : 'cannot be checked from here';
  return `pid ${holder.pid}${where} (${state})`;
}
