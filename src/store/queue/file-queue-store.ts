import { watch as watchDir, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { livenessOf, type ProcView } from '../../policy/process-identity.js';
import type { ServerJudge, SharedQueue } from '../../policy/shared-queue.js';
import { ensureDirSync } from '../../config/telemetry-dir.js';
import { readTextIfAny, writeFileAtomic } from '../durable-fs.js';
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
 * The shared queue of one machine: a JSON file of the data dir, replaced atomically (temp file and
 * rename, so a reader without the lock sees a whole queue) under the same kind of lock as the state
 * file. Its times are CLOCK_MONOTONIC, which every process of the machine shares; the file names the
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
    const { place } = options.identity;
    this.judge = (_key, server) => (livenessOf(server, place, options.proc) === 'dead' ? 'gone' : 'here');
  }

  async update<T>(change: QueueChange<T>): Promise<T> {
    ensureDirSync(this.#dir);
    const release = await this.#lock.acquire();
    try {
      const { queue, now } = await this.read();
      const next = change(queue, now);
      if (next.queue !== queue)
        await writeFileAtomic(this.location, JSON.stringify({ v: 1, boot: this.#boot, queue: next.queue }));
      return next.result;
    } finally {
      await release();
    }
  }

  async read(): Promise<{ queue: SharedQueue; now: number }> {
    const text = await readTextIfAny(this.location);
    return { queue: queueOf(text, (doc) => doc.boot === this.#boot), now: this.#clock() };
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
