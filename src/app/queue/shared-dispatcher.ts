import {
  addRunning,
  addWaiting,
  afterClockStep,
  decide,
  dropGoneServers,
  dropIdleServer,
  EMPTY_QUEUE,
  forgetLoaded,
  queueKeepAlive,
  nextDecisionInMs,
  removeEntry,
  touchServer,
  unionView,
  whyEntryWaits,
  type DecideContext,
  type GrantedEntry,
  type QueueEntry,
  type QueueServer,
  type SharedQueue,
} from '../../policy/shared-queue.js';
import type { DispatchView } from '../../policy/dispatch.js';
import type { SelfIdentity } from '../../store/processes/proc-reader.js';
import type { QueueStore } from '../../store/queue/queue-store.js';
import {
  DispatchAbortedError,
  grantFor,
  type DispatchQueue,
  type DispatchRequest,
  type Dispatcher,
  type Grant,
  type Ticket,
} from './dispatcher.js';
import type { QueueReason } from './queue-reason.js';
import type { Residency } from './residency.js';

/** A server silent for longer than this (hung, or on a machine that died) is dropped with its attempts. */
export const QUEUE_LEASE_MS = 10_000;
/** While its attempts wait, a server reads the queue this often (besides the watch), for grants. */
const LOOK_EVERY_MS = 100;
/** While it has attempts in the queue, a server writes this often: its lease, and gone servers dropped. */
const TICK_EVERY_MS = 1_000;
/** The host pool routes from a queue read at most this long ago. */
const FRESH_QUEUE_MS = 1_000;
/** After the queue failed, this server dispatches on its own this long before it tries the queue again. */
const RETRY_QUEUE_AFTER_MS = 30_000;

interface SharedDispatcherOptions {
  readonly store: QueueStore;
  /** This server's own queue: used while the shared one cannot be. */
  readonly local: Dispatcher;
  readonly residency: Residency;
  /** This server's OLLAMA_MCP_CONCURRENCY. */
  readonly concurrency: number;
  readonly switchAfterMs: number;
  /** OLLAMA_KEEP_ALIVE in ms (Infinity: forever). */
  readonly keepAliveMs: number;
  readonly identity: SelfIdentity;
  readonly warn: (message: string) => void;
  /** Told when servers were found gone: their model processes may still hold Ollama (the orphan sweep ends them). */
  readonly onServerGone?: () => void;
}

/** An attempt of this server in the shared queue. */
interface Own {
  /** Once granted: the queue's entry for it. */
  running: GrantedEntry | null;
  readonly entry: Omit<QueueEntry, 'since'>;
  readonly request: DispatchRequest;
  readonly grant: (grant: Grant) => void;
  readonly reject: (error: Error) => void;
  /** Joined the queue (its first change is written). */
  joined: boolean;
  /** Handed to this server's own queue instead (the shared one failed). */
  local: Ticket | null;
  readonly signal: AbortSignal | undefined;
}

/** The shared queue as health shows it. */
export interface SharedQueueStatus {
  readonly location: string;
  /** Servers other than this one with calls in the queue. */
  readonly otherServers: number;
  readonly waitingElsewhere: number;
  readonly runningElsewhere: number;
  /** Why the queue could not be read, if it could not. */
  readonly error: string | null;
}

type Step = (queue: SharedQueue, now: number) => SharedQueue;

interface PendingChange {
  readonly step: Step;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** This server's key in a shared queue: unique to the process, across machines. */
export function serverKeyOf(identity: SelfIdentity): string {
  return `${identity.self.pid}.${identity.self.start ?? 'x'}@${identity.place.host}`;
}

/**
 * This server's side of the queue every server in front of one Ollama shares (policy/shared-queue.ts):
 * its attempts join the shared queue, any server's change decides for all, and an attempt starts when
 * the queue shows it granted. Grants are seen through the store's watch, a read every 100 ms while an
 * attempt waits, and the server's own changes; every second a server with attempts in the queue
 * renews its lease and drops the servers that are gone. When the queue cannot be used, attempts wait
 * in this server's own queue and stderr says so once.
 */
export class SharedDispatcher implements DispatchQueue {
  readonly #options: SharedDispatcherOptions;
  readonly #key: string;
  readonly #server: Omit<QueueServer, 'seenAt'>;
  readonly #waiting = new Map<string, Own>();
  readonly #granted = new Map<string, Own>();
  #queue: SharedQueue = EMPTY_QUEUE;
  #now = 0;
  #nextId = 1;
  /** Changes asked for and not yet written: the next write takes them all at once. */
  #pending: PendingChange[] = [];
  /** The write under way, if any. */
  #writing: Promise<void> | null = null;
  #failedAt = -Infinity;
  /** When this server last read or wrote the queue (ms, performance.now). */
  #seenAt = -Infinity;
  #watcher: { close(): void } | null = null;
  #lookTimer: NodeJS.Timeout | undefined;
  #tickTimer: NodeJS.Timeout | undefined;
  #switchTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: SharedDispatcherOptions) {
    this.#options = options;
    this.#key = serverKeyOf(options.identity);
    this.#server = { ...options.identity.self, ...options.identity.place, concurrency: options.concurrency };
  }

  get running(): number {
    return this.#granted.size + this.#options.local.running;
  }

  get waiting(): number {
    return [...this.#waiting.values()].filter((own) => own.local === null).length + this.#options.local.waiting;
  }

  get limit(): number {
    return this.#options.concurrency;
  }

  /** Where the queue is: its file, or the Redis URL and key. */
  get location(): string {
    return this.#options.store.location;
  }

  residency(): { loaded: string[]; capacity: number; memoryBudget: number | null } {
    const { residency } = this.#options;
    const loaded = this.#queue.loaded.map((m) => m.model);
    return { loaded, capacity: residency.capacity, memoryBudget: residency.memoryBudget };
  }

  /** What health shows of the shared queue: the other servers and their calls, read now. */
  async shared(): Promise<SharedQueueStatus> {
    try {
      const { queue } = await this.#options.store.read();
      const theirs = (entry: QueueEntry) => entry.server !== this.#key;
      return {
        location: this.location,
        otherServers: Object.keys(queue.servers).filter((key) => key !== this.#key).length,
        waitingElsewhere: queue.waiting.filter(theirs).length,
        runningElsewhere: queue.running.filter(theirs).length,
        error: null,
      };
    } catch (error) {
      return {
        location: this.location,
        otherServers: 0,
        waitingElsewhere: 0,
        runningElsewhere: 0,
        error: (error as Error).message,
      };
    }
  }

  look(): void {
    this.#change((queue) => queue);
  }

  view(): DispatchView {
    if (performance.now() - this.#failedAt < RETRY_QUEUE_AFTER_MS) return this.#options.local.view();
    // This server's own attempts count at once, before its writes show them in the queue.
    const queue = this.#queue;
    const present = new Set([...queue.waiting, ...queue.running].map((entry) => entry.id));
    const waiting = [...this.#waiting.values()].filter((own) => own.local === null && !present.has(own.entry.id));
    const running = [...this.#granted.values()].flatMap((own) =>
      own.running !== null && !present.has(own.entry.id) ? [own.running] : [],
    );
    const seen = {
      ...queue,
      waiting: [...queue.waiting, ...waiting.map((own) => ({ ...own.entry, since: this.#now }))],
      running: [...queue.running, ...running],
    };
    return unionView(seen, this.#context(this.#now)).view;
  }

  /** `ollama ps` when stale, and the queue when this server has not read it for a second. */
  async freshen(): Promise<void> {
    const { residency } = this.#options;
    residency.refreshIfStale();
    await residency.settled();
    if (performance.now() - this.#seenAt < FRESH_QUEUE_MS || performance.now() - this.#failedAt < RETRY_QUEUE_AFTER_MS) return;
    await this.#change((queue) => queue).catch(() => {});
  }

  request(request: DispatchRequest, signal: AbortSignal | undefined): Ticket {
    if (signal?.aborted) return { granted: Promise.reject(new DispatchAbortedError()), reason: () => null };
    if (performance.now() - this.#failedAt < RETRY_QUEUE_AFTER_MS) return this.#options.local.request(request, signal);
    const id = `${this.#key}#${this.#nextId++}`;
    let own!: Own;
    const granted = new Promise<Grant>((resolve, reject) => {
      const onAbort = () => this.#abort(own);
      own = {
        entry: {
          id,
          server: this.#key,
          model: request.modelKey,
          parallel: request.parallel,
          batch: request.batch ? { id: `${this.#key}#${request.batch.id}`, limit: request.batch.limit } : null,
          ...(request.keepAliveMs === undefined ? {} : { keepAliveMs: queueKeepAlive(request.keepAliveMs) }),
        },
        request,
        grant: (grant) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(grant);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
        joined: false,
        local: null,
        signal,
        running: null,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    this.#waiting.set(id, own);
    this.#join(own);
    return { granted, reason: () => this.#reasonOf(own) };
  }

  /** Stop watching and ticking, and wait for the changes under way (at shutdown; a call still running releases its own). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = null;
    clearTimeout(this.#lookTimer);
    clearTimeout(this.#tickTimer);
    clearTimeout(this.#switchTimer);
    while (this.#writing !== null) await this.#writing;
  }

  #join(own: Own): void {
    this.#change((queue, now) => addWaiting(queue, { ...own.entry, since: now })).then(
      () => {
        own.joined = true;
        this.#see(this.#queue, this.#now);
      },
      () => {}, // #fail moved it to this server's own queue
    );
  }

  /** Hand this server's waiting attempts to its own queue (the shared one failed). */
  #waitHere(): void {
    for (const own of [...this.#waiting.values()]) {
      if (own.local !== null) continue;
      this.#waiting.delete(own.entry.id);
      own.local = this.#options.local.request(own.request, own.signal);
      own.local.granted.then(own.grant, own.reject);
    }
  }

  #abort(own: Own): void {
    if (!this.#waiting.delete(own.entry.id)) return;
    own.reject(new DispatchAbortedError());
    this.#change((queue, now) => removeEntry(queue, own.entry.id, now));
  }

  #reasonOf(own: Own): QueueReason | null {
    if (own.local !== null) return own.local.reason();
    if (!this.#waiting.has(own.entry.id)) return null;
    const why = whyEntryWaits(this.#queue, own.entry.id, this.#context(this.#now));
    return why === null ? null : { ...why.reason, elsewhere: why.elsewhere };
  }

  #context(now: number): DecideContext {
    const { residency, switchAfterMs, keepAliveMs } = this.#options;
    return { now, room: residency.room(), switchAfterMs, defaultKeepAliveMs: queueKeepAlive(keepAliveMs) };
  }

  /**
   * Change the queue: `step`, then this server's lease, gone servers dropped, and a decision for
   * everyone. One change of this server at a time.
   */
  #change(step: Step): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.#pending.push({ step, resolve, reject }));
    this.#writing ??= this.#write();
    done.catch(() => {}); // the callers that care handle it; #write reports the failure
    return done;
  }

  /** Write the changes asked for, all those asked meanwhile in one go, until none is left. */
  async #write(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0);
      try {
        const done = await this.#options.store.update((queue, now) => {
          const start = touchServer(afterClockStep(queue, now), this.#key, this.#server, now);
          const settled = this.settle(
            batch.reduce((next, change) => change.step(next, now), start),
            now,
          );
          return { queue: settled.queue, result: { gone: settled.gone, queue: settled.queue, now } };
        });
        this.#tellGone(done.gone);
        for (const change of batch) change.resolve();
        this.#see(done.queue, done.now);
      } catch (error) {
        for (const change of batch) change.reject(error as Error);
        this.#fail(error);
      }
    }
    this.#writing = null;
  }

  #tellGone(gone: readonly string[]): void {
    if (gone.length > 0) this.#options.onServerGone?.();
    for (const key of gone) {
      this.#options.warn(
        `the shared queue at ${this.location}: server ${key} is gone (dead, or silent for ${QUEUE_LEASE_MS / 1000} s); its calls no longer hold the others back`,
      );
    }
  }

  /** Gone servers dropped, a decision made, this server out of the queue when it has nothing there. */
  settle(queue: SharedQueue, now: number): { queue: SharedQueue; gone: string[] } {
    const dropped = dropGoneServers(queue, now, QUEUE_LEASE_MS, (key, server) =>
      key === this.#key ? 'here' : this.#options.store.judge(key, server),
    );
    const decided = decide(dropped.queue, this.#context(now)).queue;
    return { queue: dropIdleServer(decided, this.#key), gone: dropped.gone };
  }

  /** A queue read or written: grant this server's attempts it shows granted, and keep looking while some wait. */
  #see(queue: SharedQueue, now: number): void {
    if (this.#closed) return;
    if (now >= this.#now) {
      this.#queue = queue;
      this.#now = now;
      this.#seenAt = performance.now();
    }
    const running = new Map(queue.running.map((entry) => [entry.id, entry]));
    const waiting = new Set(queue.waiting.map((entry) => entry.id));
    for (const own of [...this.#waiting.values()]) {
      const granted = running.get(own.entry.id);
      if (granted !== undefined) this.#grant(own, granted);
      else if (own.joined && !waiting.has(own.entry.id)) this.#rejoin(own);
    }
    for (const own of this.#granted.values()) {
      const entry = own.running;
      if (entry !== null && !running.has(entry.id)) this.#change((q) => addRunning(q, entry));
    }
    const stray = [...queue.waiting, ...queue.running].filter(
      (entry) => entry.server === this.#key && !this.#waiting.has(entry.id) && !this.#granted.has(entry.id),
    );
    if (stray.length > 0) this.#change((q, at) => stray.reduce((next, entry) => removeEntry(next, entry.id, at), q));
    this.#schedule(queue, now);
  }

  /** An attempt dropped from the queue while it waited (this server was taken for gone): it joins again. */
  #rejoin(own: Own): void {
    const { id } = own.entry;
    const present = (queue: SharedQueue) => queue.waiting.some((e) => e.id === id) || queue.running.some((e) => e.id === id);
    this.#change((queue, now) => (present(queue) ? queue : addWaiting(queue, { ...own.entry, since: now })));
  }

  #grant(own: Own, entry: GrantedEntry): void {
    const { terms } = entry;
    own.running = entry;
    this.#waiting.delete(own.entry.id);
    this.#granted.set(own.entry.id, own);
    const { residency } = this.#options;
    const model = own.entry.model;
    residency.started(model, terms.sendKeepAlive ? own.request.keepAliveMs : undefined, terms.evicted);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#granted.delete(own.entry.id);
      residency.finished(model);
      this.#change((queue, now) => removeEntry(queue, own.entry.id, now));
    };
    const forget = () => void this.#change((queue) => forgetLoaded(queue, model));
    own.grant(grantFor(model, terms, residency, release, forget));
  }

  /** While attempts of this server wait: watch, read often, tick; and wake at the next switch. */
  #schedule(queue: SharedQueue, now: number): void {
    if (this.#closed) return;
    const waiting = [...this.#waiting.values()].some((own) => own.local === null);
    clearTimeout(this.#switchTimer);
    if (waiting) {
      this.#watcher ??= this.#options.store.watch(() => this.#lookSoon(0));
      this.#lookSoon(LOOK_EVERY_MS);
      const switchIn = nextDecisionInMs(queue, this.#context(now));
      if (switchIn !== null) this.#switchTimer = unref(setTimeout(() => this.look(), Math.ceil(switchIn)));
    } else {
      this.#watcher?.close();
      this.#watcher = null;
      clearTimeout(this.#lookTimer);
      this.#lookTimer = undefined;
    }
    if (waiting || this.#granted.size > 0) this.#tickTimer ??= unref(setTimeout(() => this.#tick(), TICK_EVERY_MS));
  }

  #tick(): void {
    this.#tickTimer = undefined;
    if (this.#waiting.size === 0 && this.#granted.size === 0) return;
    this.#change((queue) => queue).catch(() => this.#schedule(this.#queue, this.#now));
  }

  #lookSoon(ms: number): void {
    if (this.#lookTimer !== undefined) {
      if (ms > 0) return;
      clearTimeout(this.#lookTimer);
    }
    this.#lookTimer = unref(
      setTimeout(() => {
        this.#lookTimer = undefined;
        this.#options.store.read().then(
          ({ queue, now }) => this.#see(queue, now),
          () => this.#schedule(this.#queue, this.#now),
        );
      }, ms),
    );
  }

  #fail(error: unknown): void {
    const first = performance.now() - this.#failedAt >= RETRY_QUEUE_AFTER_MS;
    this.#failedAt = performance.now();
    this.#waitHere();
    if (first) {
      this.#options.warn(
        `the shared queue at ${this.location} cannot be used (${(error as Error).message}): this server dispatches on its own, without regard to other servers' calls, for ${RETRY_QUEUE_AFTER_MS / 1000} s at a time until it can`,
      );
    }
  }
}

function unref(timer: NodeJS.Timeout): NodeJS.Timeout {
  timer.unref();
  return timer;
}
