import { randomUUID } from 'node:crypto';
import {
  closeSync,
  ftruncateSync,
  linkSync,
  openSync,
  readFileSync,
  unlinkSync,
  watch as watchDir,
  writeFileSync,
  writeSync,
  type FSWatcher,
} from 'node:fs';
import path from 'node:path';
import { livenessOf, type ProcView } from '../../policy/process-identity.js';
import type { ServerJudge, SharedQueue } from '../../policy/shared-queue.js';
import { ensureDirSync } from '../../config/telemetry-dir.js';
import { tempPathFor } from '../durable-fs.js';
import { removeAbandonedTemps } from '../temp-files.js';
import type { SelfIdentity } from '../processes/proc-reader.js';
import { StateLock } from '../state/state-lock.js';
import { queueOf, type QueueChange, type QueueStore } from './queue-store.js';

export const QUEUE_DIR_NAME = 'queue';

/** A lock held longer than this (a server stopped while holding it) is taken over. */
const STALE_LOCK_MS = 5_000;

/** CLOCK_MONOTONIC in ms: one clock for every process of the machine, never stepped, reset at boot. */
export function machineClock(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

interface FileQueueStoreOptions {
  /** The data dir: the queue is `queue/<ollama key>.json` there. */
  readonly telemetryDir: string;
  readonly ollamaKey: string;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  /** @default machineClock */
  readonly clock?: () => number;
}

/**
 * The shared queue of one machine: a JSON file of the data dir, read and rewritten under the same
 * kind of lock as the state file. Its times are CLOCK_MONOTONIC, which every process of the machine shares; the file names the
 * boot it was written in, and a queue of another boot is empty (its servers are gone). Servers are
 * judged dead by pid and start time, as the orphan sweep judges them.
 */
export class FileQueueStore implements QueueStore {
  readonly location: string;
  readonly judge: ServerJudge;
  readonly #dir: string;
  readonly #lock: StateLock;
  readonly #boot: string | null;
  readonly #clock: () => number;
  readonly #holder: string;
  /** This process's holder, in a temp file beside the lock, hard-linked to the lock's name to take it. */
  #claim: string | null = null;
  #dirMade = false;

  constructor(options: FileQueueStoreOptions) {
    this.#dir = path.join(options.telemetryDir, QUEUE_DIR_NAME);
    this.location = path.join(this.#dir, `${options.ollamaKey}.json`);
    // A lock left by a server that exited or was killed mid-change is routine here and loses nothing
    // (the queue is rebuilt by its live servers within a second): taken over without a word.
    this.#lock = new StateLock(`${this.location}.lock`, {
      guards: this.location,
      staleMs: STALE_LOCK_MS,
      maxWaitMs: STALE_LOCK_MS + 2_000,
      warn: () => {},
    });
    this.#boot = options.identity.place.boot;
    this.#clock = options.clock ?? machineClock;
    const { self, place } = options.identity;
    this.judge = (_key, server) => (livenessOf(server, place, options.proc) === 'dead' ? 'gone' : 'here');
    this.#holder = JSON.stringify({ pid: self.pid, start: self.start, ...place, at: Date.now(), token: randomUUID() });
    process.on('exit', () => this.#claim !== null && unlinkQuietly(this.#claim));
  }

  /**
   * A change is a few small reads and writes under the lock, done synchronously when the lock is free;
   * a busy lock is waited for as the state lock is, without blocking.
   */
  async update<T>(change: QueueChange<T>): Promise<T> {
    return this.#locked(() => this.#apply(change));
  }

  /** The queue as it is now (read under the lock: a change rewrites the file in place). */
  async read(): Promise<{ queue: SharedQueue; now: number }> {
    return this.#locked(() => this.#read());
  }

  async #locked<T>(work: () => T): Promise<T> {
    this.#makeDir();
    if (this.#tryLock()) {
      try {
        return work();
      } finally {
        unlinkQuietly(this.#lock.path);
      }
    }
    const release = await this.#lock.acquire();
    try {
      return work();
    } finally {
      await release();
    }
  }

  #read(): { queue: SharedQueue; now: number } {
    let text: string | null = null;
    try {
      text = readFileSync(this.location, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return { queue: queueOf(text, (doc) => doc.boot === this.#boot), now: this.#clock() };
  }

  /**
   * Read, change and rewrite the queue in place: a temp file renamed over it costs ~1 ms on ext4 (it
   * flushes a file replaced so), in place ~0.01 ms (bench/RESULTS.md). Every reader holds the lock, so
   * none sees a half-written queue; one left torn by a crash mid-write reads as empty, and the live
   * servers put their calls back within a second.
   */
  #apply<T>(change: QueueChange<T>): T {
    const { queue, now } = this.#read();
    const next = change(queue, now);
    if (next.queue !== queue) writeInPlace(this.location, JSON.stringify({ v: 1, boot: this.#boot, queue: next.queue }));
    return next.result;
  }

  /** Take the lock now if it is free: hard-link this process's holder file to its name (fails when it exists). */
  #tryLock(): boolean {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        this.#claim ??= this.#writeClaim();
        linkSync(this.#claim, this.#lock.path);
        return true;
      } catch (error) {
        // Gone (removed as an abandoned temp file): write it again. Anything else (held, no hard
        // links here): the state lock's own way decides.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false;
        this.#claim = null;
      }
    }
    return false;
  }

  #writeClaim(): string {
    const claim = tempPathFor(this.#lock.path);
    writeFileSync(claim, this.#holder, { mode: 0o600, flag: 'wx' });
    return claim;
  }

  #makeDir(): void {
    if (this.#dirMade) return;
    ensureDirSync(this.#dir);
    this.#dirMade = true;
    void removeAbandonedTemps(this.#dir); // left by servers killed mid-change
  }

  watch(onChange: () => void): { close(): void } | null {
    let watcher: FSWatcher;
    try {
      ensureDirSync(this.#dir);
      const name = path.basename(this.location);
      watcher = watchDir(this.#dir, { persistent: false }, (_event, file) => {
        if (file === null || file === name) onChange();
      });
      watcher.on('error', () => watcher.close());
    } catch {
      return null;
    }
    return watcher;
  }
}

/** Overwrite `file` from its start and cut it to the new length (never truncated to nothing first: ext4 flushes that too). */
function writeInPlace(file: string, text: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r+');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    fd = openSync(file, 'wx', 0o600);
  }
  try {
    const bytes = Buffer.from(text, 'utf8');
    writeSync(fd, bytes, 0, bytes.length, 0);
    ftruncateSync(fd, bytes.length);
  } finally {
    closeSync(fd);
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}
