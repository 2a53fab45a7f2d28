import { once } from 'node:events';
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { ClientClosedError, ClientOfflineError, ConnectionTimeoutError, createClient, TimeoutError } from '@redis/client';
import {
  dict,
  type DescribedStateBackend,
  type StateBackendStatus,
  type StateData,
  type StoreWriteFailure,
  type TaskScope,
} from '../state-backend.js';
import { ESCALATED_AGE_FACTOR, NEVER_PRUNE } from '../../policy/task-ledger.js';
import { mainFileJson, parseMainFile, parseShardFile } from './state-schema.js';
import { checkScope } from './state-store.js';
import { StateStoreError } from './state-store-error.js';
import { parseRedisUrl, isRedisUrlError, withoutSecret, type RedisTarget } from '../../config/redis-url.js';
import { CAS_SCRIPT, KEEP, casArguments, conflictBackoffMs, redisKeys, type RedisKeys } from './redis-cas.js';

interface RedisStateStoreOptions {
  /** `OLLAMA_MCP_STATE_URL` (validated by the config). */
  readonly url: string;
  /** `OLLAMA_MCP_STATE_PREFIX`. */
  readonly prefix: string;
  /** Task entries expire this long after their last update (OLLAMA_MCP_TASK_TTL_DAYS). */
  readonly taskTtlMs: number;
  /** Operator warnings: the connection lost and back, a value that did not parse. */
  readonly warn?: (message: string) => void;
}

/** Each command gives up after this (a slow or stopped Redis must not hold a run). */
const COMMAND_TIMEOUT_MS = 1_000;
/** A transaction that cannot start within this (earlier ones stuck on a slow Redis) fails. */
const QUEUE_WAIT_MS = 3 * COMMAND_TIMEOUT_MS;
/** A transaction that keeps meeting concurrent writers gives up after this many tries. */
const MAX_TRIES = 64;

type Client = ReturnType<typeof createClient>;

/**
 * The task ledger and the circuits in one Redis, shared by every server pointed at it (team
 * mode). `<prefix>circuits` holds every circuit (the state.json format), `<prefix>task:<id>` one
 * task entry each, expiring OLLAMA_MCP_TASK_TTL_DAYS after its last update (an escalated one four
 * times later): Redis times the expiry, so this server's clock stepping moves none.
 *
 * - `transact(scope, fn)` is optimistic and exact across machines: it reads the scope's keys
 *   (MGET), applies `fn`, then a Lua script writes the changed keys only if none changed since the
 *   read. On a conflict it reads again and re-applies `fn` after a jittered pause, up to MAX_TRIES.
 * - Faults never stop a run: commands time out, fail at once while the connection is down (no
 *   offline queue) and surface as a `StateStoreError`; the client reconnects by itself, and the
 *   connection lost and back are said once each on `warn`.
 * - The password never appears in a message: the URL is shown redacted, errors are scrubbed.
 */
export class RedisStateStore implements DescribedStateBackend {
  readonly #client: Client;
  readonly #target: RedisTarget;
  readonly #keys: RedisKeys;
  readonly #taskTtlMs: number;
  readonly #warn: (message: string) => void;
  #writeFailure: StoreWriteFailure | null = null;
  /** Settles when this process's last transaction so far is done. */
  #tail: Promise<void> = Promise.resolve();
  /** The last connection error (scrubbed), while not connected. */
  #connectionError: string | null = null;
  #lostSaid = false;
  #everReady = false;
  /** Per key, the malformed value last warned about: each is said once, not on every read. */
  readonly #warned = new Map<string, string>();

  constructor(options: RedisStateStoreOptions) {
    const target = parseRedisUrl(options.url);
    if (isRedisUrlError(target)) throw new StateStoreError(`OLLAMA_MCP_STATE_URL: ${target.error}`, { step: 'setup' });
    this.#target = target;
    this.#keys = redisKeys(options.prefix);
    this.#taskTtlMs = options.taskTtlMs;
    this.#warn = options.warn ?? ((message) => process.stderr.write(`ollama-runner-mcp: ${message}\n`));
    this.#client = createClient({
      socket: {
        host: target.host,
        port: target.port,
        // TLS checks the certificate against the host name (SNI only for a name: RFC 6066 forbids an IP there).
        ...(target.tls ? { tls: true as const, ...(isIP(target.host) === 0 ? { servername: target.host } : {}) } : {}),
        connectTimeout: 2_000,
        // Jittered backoff, at most 2 s; never gives up (the server reconnects by itself).
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), 2_000) * (0.5 + Math.random() / 2),
      },
      username: target.username,
      password: target.password,
      database: target.db,
      disableOfflineQueue: true,
      commandsQueueMaxLength: 2_000, // more are refused at once: never an unbounded queue
      // A half-dead connection (a peer gone without a FIN) is found within this.
      pingInterval: 5_000,
      commandOptions: { timeout: COMMAND_TIMEOUT_MS },
    });
    this.#client.on('error', (error: Error) => this.#lost(error));
    this.#client.on('ready', () => this.#ready());
    // Never awaited: start-up does not wait for Redis, and a Redis that is down only makes
    // transactions fail (fast, no offline queue) until it is back.
    this.#client.connect().catch((error: Error) => this.#lost(error));
  }

  /** `redis://user:***@host:port/db`. */
  get location(): string {
    return this.#target.redacted;
  }

  get lastWriteFailure(): StoreWriteFailure | null {
    return this.#writeFailure;
  }

  /**
   * For other shared state of team mode (e.g. a cross-machine concurrency cap): the connected
   * client and this store's key names. Not part of StateBackend.
   */
  get connection() {
    return { client: this.#client, keys: this.#keys, connected: () => this.#connected(), location: this.location };
  }

  async snapshot(scope: TaskScope = []): Promise<StateData> {
    try {
      await this.#connected();
      return (await this.#read(await this.#taskIds(scope))).state;
    } catch (error) {
      throw this.#asStoreError(error);
    }
  }

  async transact<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    // One transaction of this process at a time (in call order): they all read the circuits key,
    // so running them side by side would only make them conflict with each other.
    const ready = this.#tail;
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    this.#tail = ready.then(() => mine);
    try {
      if ((await Promise.race([ready.then(() => true), delay(QUEUE_WAIT_MS, false, { ref: false })])) === false) {
        throw this.#failed(
          `the shared state at ${this.location} is too slow: this update waited ${QUEUE_WAIT_MS} ms behind this server's earlier ones`,
        );
      }
      return await this.#transactInTurn(scope, fn);
    } finally {
      done();
    }
  }

  async #transactInTurn<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T> {
    const taskIds = await this.#io(() => this.#taskIds(scope));
    for (let attempt = 1; ; attempt += 1) {
      const { state, raw, before } = await this.#io(() => this.#read(taskIds));
      const result = fn(state); // its own errors are the caller's: not a store failure
      checkScope(state.tasks, taskIds);
      const writes = this.#serialize(state, taskIds).map((after, index) => (after === before[index] ? KEEP : after));
      if (writes.every((write) => write === KEEP) || (await this.#io(() => this.#compareAndSet(state, taskIds, raw, writes)))) {
        this.#writeFailure = null;
        return result;
      }
      if (attempt >= MAX_TRIES) {
        throw this.#failed(
          `the shared state at ${this.location} kept changing under this update (${attempt} tries): too many servers writing the same task or circuits at once`,
        );
      }
      await delay(conflictBackoffMs(attempt, Math.random()));
    }
  }

  /** Run a Redis round trip; its failure becomes a StateStoreError, remembered as the last write failure. */
  async #io<T>(work: () => Promise<T>): Promise<T> {
    try {
      await this.#connected();
      return await work();
    } catch (error) {
      throw this.#failed(this.#asStoreError(error));
    }
  }

  /** `failure` (a message: the update could not get its turn), remembered as the last write failure. */
  #failed(failure: StateStoreError | string): StateStoreError {
    const error = typeof failure === 'string' ? new StateStoreError(failure, { step: 'lock' }) : failure;
    this.#writeFailure = { at: Date.now(), message: error.message };
    return error;
  }

  async inspect(): Promise<string[]> {
    const status = await this.status();
    return status.reachable ? [] : [`Redis at ${status.location} is not reachable: ${status.error ?? 'no answer'}`];
  }

  async status(): Promise<StateBackendStatus> {
    try {
      await this.#connected();
      await this.#client.sendCommand(['PING']);
      return { kind: 'redis', location: this.location, reachable: true, error: null };
    } catch (error) {
      return { kind: 'redis', location: this.location, reachable: false, error: this.#reason(error) };
    }
  }

  async close(): Promise<void> {
    try {
      if (this.#client.isOpen) this.#client.destroy();
    } catch {
      // already closed
    }
  }

  /**
   * Right after start-up the first connection is still being made: wait for it (at most a
   * command timeout) rather than fail the first runs. Once an attempt has failed, commands fail
   * at once until the connection is back (no waiting on a Redis that is down).
   */
  async #connected(): Promise<void> {
    if (this.#client.isReady || this.#connectionError !== null || !this.#client.isOpen) return;
    // Rejects on an error or at the timeout: either way, the command that follows says why it failed.
    await once(this.#client, 'ready', { signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS) }).catch(() => {});
  }

  /** The task ids of the scope; `all` lists every task key (SCAN: used only by explicit maintenance). */
  async #taskIds(scope: TaskScope): Promise<string[]> {
    if (scope !== 'all') return [...new Set(scope)];
    const ids: string[] = [];
    for await (const batch of this.#client.scanIterator({ MATCH: this.#keys.taskPattern, COUNT: 500 })) {
      for (const key of batch) ids.push(this.#keys.taskIdOf(String(key)));
    }
    return [...new Set(ids)];
  }

  /**
   * Read the circuits and the tasks at once (MGET is atomic). `raw` is what each key held ('' for
   * none: the compare-and-set compares against it), `before` each key's value as this process
   * would write it (to find what `fn` changed).
   */
  async #read(taskIds: readonly string[]): Promise<{ state: StateData; raw: string[]; before: string[] }> {
    const replies = (await this.#client.sendCommand(['MGET', ...this.#keysOf(taskIds)])) as (string | null)[];
    const raw = replies.map((reply) => reply ?? '');
    const breakers = this.#parseCircuits(raw[0]!);
    const tasks = dict<StateData['tasks'][string]>();
    taskIds.forEach((id, index) => {
      const entry = this.#parseTask(id, raw[index + 1]!);
      if (entry) tasks[id] = entry;
    });
    // Redis expires task keys itself (PEXPIRE): the ledger's own pruning never comes due.
    const state: StateData = { tasks, breakers, prunedAt: NEVER_PRUNE, prunedAsOf: 0 };
    return { state, raw, before: this.#serialize(state, taskIds) };
  }

  /** Each key's value as this process writes it ('' for none), in the order of {@link #keysOf}. */
  #serialize(state: StateData, taskIds: readonly string[]): string[] {
    const circuits =
      Object.keys(state.breakers).length === 0
        ? ''
        : JSON.stringify(mainFileJson({ breakers: state.breakers, prunedAt: 0, prunedAsOf: 0 }));
    return [circuits, ...taskIds.map((id) => (state.tasks[id] === undefined ? '' : JSON.stringify(state.tasks[id])))];
  }

  async #compareAndSet(
    state: StateData,
    taskIds: readonly string[],
    raw: readonly string[],
    writes: readonly string[],
  ): Promise<boolean> {
    const ttls = [0, ...taskIds.map((id) => (state.tasks[id]?.escalated ? ESCALATED_AGE_FACTOR : 1) * this.#taskTtlMs)];
    const reply = await this.#client.sendCommand(['EVAL', CAS_SCRIPT, ...casArguments(this.#keysOf(taskIds), raw, writes, ttls)]);
    return Number(reply) === 1;
  }

  /** The circuits key, then each task's: the order of every read and write. */
  #keysOf(taskIds: readonly string[]): string[] {
    return [this.#keys.circuits, ...taskIds.map((id) => this.#keys.task(id))];
  }

  #parseCircuits(raw: string): StateData['breakers'] {
    if (raw === '') return dict();
    const key = this.#keys.circuits;
    try {
      const { data, dropped, reset } = parseMainFile(JSON.parse(raw));
      const repairs = [...dropped, ...reset];
      if (repairs.length > 0)
        this.#warnOnce(key, raw, `in ${key} at ${this.location}: dropped ${repairs.join(', ')} (malformed)`);
      return data.breakers;
    } catch (error) {
      const why = (error as Error).message.split('\n')[0];
      this.#warnOnce(
        key,
        raw,
        `${key} at ${this.location} is not a valid circuit record (${why}): every circuit starts closed; it is overwritten by the next update`,
      );
      return dict();
    }
  }

  #parseTask(taskId: string, raw: string): StateData['tasks'][string] | undefined {
    if (raw === '') return undefined;
    const key = this.#keys.task(taskId);
    try {
      const { data } = parseShardFile({ tasks: { [taskId]: JSON.parse(raw) as unknown } });
      const entry = data.tasks[taskId];
      if (entry === undefined) throw new Error('not a task entry');
      return entry;
    } catch (error) {
      const why = (error as Error).message.split('\n')[0];
      this.#warnOnce(key, raw, `${key} at ${this.location} is not a valid task entry (${why}): its retry count restarts at 0`);
      return undefined;
    }
  }

  #warnOnce(key: string, raw: string, message: string): void {
    if (this.#warned.get(key) === raw) return;
    this.#warned.set(key, raw);
    this.#warn(message);
  }

  /** One line saying why a command failed; never the password. */
  #reason(error: unknown): string {
    if (isOffline(error) && this.#connectionError !== null) return `not connected (${this.#connectionError}); reconnecting`;
    return withoutSecret(describeRedisError(error), this.#target);
  }

  #asStoreError(error: unknown): StateStoreError {
    if (error instanceof StateStoreError) return error;
    return new StateStoreError(`the shared state at ${this.location} cannot be used: ${this.#reason(error)}`, {
      step: 'update',
      cause: error,
    });
  }

  #lost(error: Error): void {
    this.#connectionError = withoutSecret(describeRedisError(error), this.#target);
    if (this.#lostSaid) return;
    this.#lostSaid = true;
    this.#warn(
      `${this.#everReady ? 'lost the connection to' : 'cannot connect to'} Redis at ${this.location} (${this.#connectionError}): runs go on, but the shared ledger and circuits are not updated until it is back; reconnecting in the background`,
    );
  }

  #ready(): void {
    if (this.#lostSaid)
      this.#warn(`connected to Redis at ${this.location} again: the shared ledger and circuits are updated again`);
    this.#lostSaid = false;
    this.#everReady = true;
    this.#connectionError = null;
  }
}

/** The client gave up on a command because it is not connected (or closed). */
function isOffline(error: unknown): boolean {
  return error instanceof ClientOfflineError || error instanceof ClientClosedError;
}

/** A one-line reason from the client's errors (which may be AggregateErrors without a message). */
function describeRedisError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describeRedisError(error.errors[0]);
  if (error instanceof ClientClosedError) return 'the client is closed';
  if (error instanceof ClientOfflineError) return 'not connected (reconnecting)';
  if (error instanceof TimeoutError) return `no answer within ${COMMAND_TIMEOUT_MS} ms`;
  if (error instanceof ConnectionTimeoutError) return 'the connection timed out';
  const { code, message, name } = error as NodeJS.ErrnoException;
  const text = message || name || String(error);
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}
