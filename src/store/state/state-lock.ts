import { randomUUID } from 'node:crypto';
import { link, stat, unlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { livenessOf } from '../../policy/process-identity.js';
import { createFile, orIfMissing, readTextIfAny, tempPathFor } from '../durable-fs.js';
import { parseHolder, type Holder } from '../holder.js';
import { CONTENDED, judgeLock, nextLockAttempt, type HolderLiveness, type LockJudgement } from './lock-policy.js';
import { liveProcView, selfIdentity, type SelfIdentity } from '../processes/proc-reader.js';
import { StateStoreError } from './state-store-error.js';

interface StateLockOptions {
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
type ReleaseLock = () => Promise<void>;

/** While waiting, the holder is judged at the first attempt, then at most this often (it reads /proc). */
const JUDGE_EVERY_MS = 100;

/** `link` fails so where the file system has no hard links: the lock is then created in place. */
const NO_HARD_LINKS: ReadonlySet<string> = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

/** This acquisition's holder, written in a temp file beside the lock, ready to be linked into place. */
interface Claim {
  readonly token: string;
  readonly temp: string;
}

/**
 * The state's cross-process lock: the file `<state>.lock`, created with its holder already in it
 * (the holder is written to a temp file, then hard-linked to the lock's name, which fails if the
 * lock exists), so that no lock is ever seen empty; removed to release. Waiting backs off with
 * jitter, never blocking the thread. Where the file system has no hard links, the lock is created
 * exclusively (`wx`) and its holder written after.
 *
 * A lock is judged by who holds it (`judgeLock` in lock-policy.ts), never by its mtime alone,
 * which a crash followed by a clock step makes wrong (hence no proper-lockfile).
 */
export class StateLock {
  readonly path: string;
  readonly #options: StateLockOptions;
  readonly #identity: SelfIdentity = selfIdentity();
  /** The other holder's lock as first seen, and when (monotonic). */
  #seen: { readonly text: string; readonly since: number } | null = null;
  #hardLinks = true;

  constructor(lockPath: string, options: StateLockOptions) {
    this.path = lockPath;
    this.#options = options;
  }

  /** Take the lock, waiting while another process has it. @throws StateStoreError (step `lock`) */
  async acquire(): Promise<ReleaseLock> {
    const claim: { current: Claim | null } = { current: null };
    try {
      return await this.#acquire(claim);
    } finally {
      if (claim.current !== null) await unlink(claim.current.temp).catch(() => {});
    }
  }

  async #acquire(claim: { current: Claim | null }): Promise<ReleaseLock> {
    const started = performance.now();
    let heldBy = 'another process';
    let judgedAt = started;
    for (let attempt = 1; ; attempt += 1) {
      let failure: NodeJS.ErrnoException | undefined;
      let retryNow = false;
      try {
        const token = await this.#tryCreate(claim);
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
  async #tryCreate(claim: { current: Claim | null }): Promise<string | null> {
    if (!this.#hardLinks) return this.#tryCreateInPlace();
    claim.current ??= await this.#writeClaim();
    try {
      await link(claim.current.temp, this.path);
      return claim.current.token;
    } catch (error) {
      const { code } = error as NodeJS.ErrnoException;
      if (code === CONTENDED) return null;
      if (code === 'ENOENT') claim.current = null; // its temp file was removed: the next attempt writes another
      if (code === undefined || !NO_HARD_LINKS.has(code)) throw error;
      this.#hardLinks = false;
      return this.#tryCreateInPlace();
    }
  }

  /** This process's holder, with a new token, in a temp file beside the lock. */
  async #writeClaim(): Promise<Claim> {
    const holder = this.#newHolder();
    const temp = tempPathFor(this.path);
    await createFile(temp, JSON.stringify(holder));
    return { token: holder.token, temp };
  }

  #newHolder(): LockHolder {
    const { self, place } = this.#identity;
    return { pid: self.pid, start: self.start, ...place, at: Date.now(), token: randomUUID() };
  }

  /** Without hard links: create the lock exclusively with its holder in it (a lock naming nobody would hold the others off). */
  async #tryCreateInPlace(): Promise<string | null> {
    const holder = this.#newHolder();
    try {
      await createFile(this.path, JSON.stringify(holder));
      return holder.token;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === CONTENDED) return null;
      throw error;
    }
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
    const ageMs = liveness === 'unreadable' ? await this.#fileAgeMs() : 0;
    if (ageMs === null) return 'free'; // released meanwhile
    const judged = judgeLock(liveness, now - this.#seen.since, this.#options.staleMs, ageMs);
    if (judged === 'wait') return who;
    // Removed only if it is still the lock judged: another process may have taken it over meanwhile.
    if ((await readTextIfAny(this.path)) !== text) return 'free';
    await orIfMissing(unlink(this.path), undefined);
    this.#seen = null;
    this.#options.warn(this.#takenOver(judged, who, text, ageMs));
    return 'free';
  }

  /** How long ago the lock file was written, by the wall clock (negative: dated ahead); null when it is gone. */
  async #fileAgeMs(): Promise<number | null> {
    const info = await orIfMissing(stat(this.path), null);
    return info && Date.now() - info.mtimeMs;
  }

  /** The stderr line of a lock taken over. */
  #takenOver(judged: Exclude<LockJudgement, 'wait'>, who: string, text: string, ageMs: number): string {
    const lock = `the state lock ${this.path}`;
    switch (judged) {
      case 'holder_gone':
        return `${lock} was held by ${who}: taken over`;
      case 'abandoned': {
        const what = text === '' ? 'was empty' : 'named no holder';
        const when = ageMs >= 0 ? `${Math.round(ageMs / 1000)} s ago` : `${Math.round(-ageMs / 1000)} s ahead of this clock`;
        return `${lock} ${what} (written ${when}: a server was killed while taking it): taken over`;
      }
      case 'unchanged':
        return `${lock} was held by ${who}, unchanged for over ${this.#options.staleMs} ms: taken over`;
    }
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
