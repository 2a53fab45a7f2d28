import { setTimeout as delay } from 'node:timers/promises';
import { livenessOf, type ProcView } from '../../policy/process-identity.js';
import type { ServerJudge, SharedQueue } from '../../policy/shared-queue.js';
import type { SelfIdentity } from '../processes/proc-reader.js';
import type { SlotRedisConnection } from '../slots/redis-slot-table.js';
import { CAS_SCRIPT, casArguments, conflictBackoffMs } from '../state/redis-cas.js';
import { queueOf, type QueueChange, type QueueStore } from './queue-store.js';

/** A queue no server has written for this long is gone (its servers with it): Redis drops it. */
const QUEUE_TTL_MS = 60 * 60_000;
/** Writers that keep colliding give up after this many tries (the caller then dispatches on its own). */
const MAX_TRIES = 50;

interface RedisQueueStoreOptions {
  readonly connection: SlotRedisConnection;
  readonly ollamaKey: string;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
}

/**
 * The shared queue in team mode: one key of the team's Redis per Ollama, changed by compare-and-set
 * (read, decide here, write only if no one wrote since; else again), so servers on several machines
 * share one queue. Its clock is Redis's TIME, the one clock every machine sees. Servers on this
 * machine are judged dead by pid and start time; those on others only by their lease.
 */
export class RedisQueueStore implements QueueStore {
  readonly location: string;
  readonly judge: ServerJudge;
  readonly #connection: SlotRedisConnection;
  readonly #key: string;

  constructor(options: RedisQueueStoreOptions) {
    this.#connection = options.connection;
    this.#key = `${options.connection.keys.prefix}queue:${options.ollamaKey}`;
    this.location = `${options.connection.location} (key ${this.#key})`;
    const { place } = options.identity;
    this.judge = (_key, server) => (livenessOf(server, place, options.proc) === 'dead' ? 'gone' : 'here');
  }

  async update<T>(change: QueueChange<T>): Promise<T> {
    await this.#connection.connected();
    for (let attempt = 1; ; attempt += 1) {
      const [raw, now] = await Promise.all([this.#get(), this.#now()]);
      const queue = queueOf(raw);
      const next = change(queue, now);
      if (next.queue === queue) return next.result;
      const text = JSON.stringify({ v: 1, queue: next.queue });
      const args = casArguments([this.#key], [raw ?? ''], [text], [QUEUE_TTL_MS]);
      if (Number(await this.#connection.client.sendCommand(['EVAL', CAS_SCRIPT, ...args])) === 1) return next.result;
      if (attempt >= MAX_TRIES) throw new Error(`${this.location}: ${MAX_TRIES} writes in a row met another server's`);
      await delay(conflictBackoffMs(attempt, Math.random()));
    }
  }

  async read(): Promise<{ queue: SharedQueue; now: number }> {
    await this.#connection.connected();
    const [raw, now] = await Promise.all([this.#get(), this.#now()]);
    return { queue: queueOf(raw), now };
  }

  /** Redis could tell (keyspace notifications), but only when its operator turned them on: the dispatcher polls. */
  watch(): null {
    return null;
  }

  async #get(): Promise<string | null> {
    const value = await this.#connection.client.sendCommand(['GET', this.#key]);
    return value === null || value === undefined ? null : String(value);
  }

  /** Redis's TIME in ms. */
  async #now(): Promise<number> {
    const [seconds, micros] = (await this.#connection.client.sendCommand(['TIME'])) as [string, string];
    return Number(seconds) * 1000 + Number(micros) / 1000;
  }
}
