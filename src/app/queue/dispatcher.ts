import {
  afterStart,
  busyBeside,
  attemptsToStart,
  nextSwitchInMs,
  placementOf,
  whyWaiting,
  type DispatchView,
  type Placement,
  type QueuedAttempt,
} from '../../policy/dispatch.js';
import type { GrantTerms } from '../../policy/shared-queue.js';
import type { QueueReason } from './queue-reason.js';
import type { Residency } from './residency.js';

/** An attempt's place in line: the grant arrives through `granted`; `reason()` says why it still waits (null once granted). */
export interface Ticket {
  readonly granted: Promise<Grant>;
  reason(): QueueReason | null;
}

/** Where attempts wait for their turn: this server's own queue, or the queue shared by every server of one Ollama. */
export interface DispatchQueue {
  /** Attempts of this server sent on and not yet released. */
  readonly running: number;
  /** Attempts of this server waiting for their turn. */
  readonly waiting: number;
  /** OLLAMA_MCP_CONCURRENCY. */
  readonly limit: number;
  /** The models believed loaded, and how many fit together (for health). */
  residency(): { loaded: string[]; capacity: number; memoryBudget: number | null };
  /** Look at the queue again: what Ollama has loaded may have changed. */
  look(): void;
  /** The queue as the dispatch policy sees it now (where the host pool routes from). */
  view(): DispatchView;
  /** Learn what the view needs, when it is stale: `ollama ps`, the shared queue. Never rejects. */
  freshen(): Promise<void>;
  request(request: DispatchRequest, signal: AbortSignal | undefined): Ticket;
  /** At shutdown, once the calls ended: write what is left to write, and stop. */
  close?(): Promise<void>;
}

/** An attempt sent on to Ollama. */
export interface Grant {
  /** Frees the attempt's slots once its verdict is recorded. Calling it twice is harmless. */
  readonly release: () => void;
  /** Its model was not loaded as far as this server knew: the attempt will wait for a load. */
  readonly cold: boolean;
  /** Where its model stands in Ollama: loaded, loading alone, or beside busy models known or guessed to fit. */
  readonly placement: Placement;
  /** Tell the dispatcher the answer has begun: a cold attempt's model is loaded now (see Residency.loadedOne). */
  readonly answerBegan: () => void;
  /**
   * Tell the dispatcher no answer began within the start allowance: the model is not loaded, and
   * if it was sent beside busy models, they did not fit (see Residency.startTimedOut). Returns why
   * the attempt is not its task's failure when this server only guessed they would fit, else null.
   */
  readonly startTimedOut: () => string | null;
  /**
   * Send the keep-alive the attempt asked for. False while attempts for other models wait here: Ollama
   * copies a request's keep-alive onto its loaded model, so a long one would keep a model loaded that
   * a waiting attempt needs to replace, and that attempt would wait the whole keep-alive inside Ollama.
   */
  readonly sendKeepAlive: boolean;
  /** The Ollama host it is sent to (app/queue/host-pool.ts): its name and its CLI's environment; absent: the server's one. */
  readonly host?: {
    readonly name: string;
    readonly env: Readonly<Record<string, string | undefined>>;
    /** The server has several hosts: progress names this one. */
    readonly named: boolean;
  };
  /**
   * Tell the pool the attempt's host could not be reached: it is skipped for a while. Returns why the
   * attempt is not its task's failure when another host can serve its model (the call goes on there), else null.
   */
  readonly unreachable?: (error: string) => string | null;
}

export interface DispatchRequest {
  readonly modelKey: string;
  /** Requests of the model Ollama runs at once. */
  readonly parallel: number;
  /** The batch the attempt belongs to, and the batch's limit on its jobs at once. */
  readonly batch?: { readonly id: string; readonly limit: number };
  /** The keep-alive the attempt asks Ollama for, in ms (undefined: Ollama's default). */
  readonly keepAliveMs?: number;
  /** The host the call pinned (its `host` argument, as OLLAMA_MCP_HOSTS names it); undefined: the pool chooses. */
  readonly host?: string | undefined;
}

/** Thrown (as `granted`'s rejection) when a waiting attempt is aborted before it was sent on. */
export class DispatchAbortedError extends Error {
  constructor() {
    super('aborted while waiting for its turn');
    this.name = 'DispatchAbortedError';
  }
}

interface DispatcherOptions {
  /** This server's attempts in flight at most (OLLAMA_MCP_CONCURRENCY). */
  readonly concurrency: number;
  /** How long an attempt for a model that is not loaded waits before the server switches models. */
  readonly switchAfterMs: number;
  readonly residency: Residency;
  /** ms, monotonic. */
  readonly clock: () => number;
}

interface Waiter extends QueuedAttempt {
  readonly keepAliveMs: number | undefined;
  readonly grant: (grant: Grant) => void;
}

/**
 * The one queue every attempt of this server waits in, `ollama_run` and `ollama_run_many` alike: an attempt
 * is sent on only when Ollama will run it at once (policy/dispatch.ts says which), so the waiting
 * happens here, visible, cancellable and untimed, and not inside Ollama. No I/O of its own: the
 * residency view asks `ollama ps` when the order depends on it.
 */
export class Dispatcher implements DispatchQueue {
  readonly #options: DispatcherOptions;
  readonly #waiting: Waiter[] = [];
  readonly #running = new Map<string, number>();
  readonly #batchRunning = new Map<string, number>();
  readonly #lastStarted = new Map<string, number>();
  #nextId = 1;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: DispatcherOptions) {
    this.#options = options;
  }

  /** Attempts sent on and not yet released. */
  get running(): number {
    return [...this.#running.values()].reduce((total, n) => total + n, 0);
  }

  /** Attempts waiting for their turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** OLLAMA_MCP_CONCURRENCY. */
  get limit(): number {
    return this.#options.concurrency;
  }

  /** The models this server believes loaded, and how many fit together (for health). */
  residency(): { loaded: string[]; capacity: number; memoryBudget: number | null } {
    const residency = this.#options.residency;
    return { loaded: residency.loaded(this.#busy()), capacity: residency.capacity, memoryBudget: residency.memoryBudget };
  }

  /** Look at the queue again: what Ollama has loaded may have changed. */
  look(): void {
    this.#dispatch();
  }

  view(): DispatchView {
    return this.#view();
  }

  async freshen(): Promise<void> {
    this.#options.residency.refreshIfStale();
    await this.#options.residency.settled();
  }

  request(request: DispatchRequest, signal: AbortSignal | undefined): Ticket {
    if (signal?.aborted) return { granted: Promise.reject(new DispatchAbortedError()), reason: () => null };
    let waiter!: Waiter;
    let granted = false;
    const promise = new Promise<Grant>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index === -1) return;
        this.#waiting.splice(index, 1);
        reject(new DispatchAbortedError());
        this.#dispatch();
      };
      waiter = {
        id: this.#nextId++,
        modelKey: request.modelKey,
        parallel: request.parallel,
        since: this.#options.clock(),
        batch: request.batch ?? null,
        keepAliveMs: request.keepAliveMs,
        grant: (grant) => {
          granted = true;
          signal?.removeEventListener('abort', onAbort);
          resolve(grant);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    this.#waiting.push(waiter);
    this.#dispatch();
    return {
      granted: promise,
      reason: () => (granted || !this.#waiting.includes(waiter) ? null : whyWaiting(this.#view(), waiter)),
    };
  }

  #busy(): Set<string> {
    return new Set([...this.#running].filter(([, n]) => n > 0).map(([model]) => model));
  }

  #view(): DispatchView {
    const residency = this.#options.residency;
    return {
      now: this.#options.clock(),
      waiting: [...this.#waiting],
      running: this.#running,
      batchRunning: this.#batchRunning,
      loaded: residency.loaded(this.#busy()),
      lastStarted: this.#lastStarted,
      room: residency.room(),
      concurrency: this.#options.concurrency,
      switchAfterMs: this.#options.switchAfterMs,
    };
  }

  /** Send on every attempt that may start now, and look again when a waiting attempt becomes overdue. */
  #dispatch(): void {
    clearTimeout(this.#timer);
    let view = this.#view();
    for (const attempt of attemptsToStart(view)) {
      const next = afterStart(view, attempt);
      this.#start(attempt as Waiter, view, next);
      view = next;
    }
    if (this.#waiting.length === 0) return;
    // An attempt waits for a model that is not loaded: which goes next depends on what is loaded, so have
    // `ollama ps` say it again if stale. (An attempt waiting for its loaded model's slot needs no news.)
    if (view.waiting.some((attempt) => !view.loaded.includes(attempt.modelKey))) this.#options.residency.refreshIfStale();
    const switchIn = nextSwitchInMs(view);
    if (switchIn !== null) {
      this.#timer = setTimeout(() => this.#dispatch(), Math.ceil(switchIn));
      this.#timer.unref();
    }
  }

  #start(attempt: Waiter, before: DispatchView, after: DispatchView): void {
    this.#waiting.splice(this.#waiting.indexOf(attempt), 1);
    this.#running.set(attempt.modelKey, (this.#running.get(attempt.modelKey) ?? 0) + 1);
    if (attempt.batch !== null) this.#batchRunning.set(attempt.batch.id, (this.#batchRunning.get(attempt.batch.id) ?? 0) + 1);
    this.#lastStarted.set(attempt.modelKey, before.now);
    const terms: GrantTerms = {
      placement: placementOf(before, attempt.modelKey),
      beside: busyBeside(before, attempt.modelKey),
      evicted: before.loaded.filter((model) => model !== attempt.modelKey && !after.loaded.includes(model)),
      sendKeepAlive: !this.#waiting.some((waiting) => waiting.modelKey !== attempt.modelKey),
    };
    const residency = this.#options.residency;
    residency.started(attempt.modelKey, terms.sendKeepAlive ? attempt.keepAliveMs : undefined, terms.evicted);
    attempt.grant(grantFor(attempt.modelKey, terms, residency, this.#releaser(attempt)));
  }

  #releaser(attempt: Waiter): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running.set(attempt.modelKey, (this.#running.get(attempt.modelKey) ?? 1) - 1);
      if (attempt.batch !== null) this.#batchRunning.set(attempt.batch.id, (this.#batchRunning.get(attempt.batch.id) ?? 1) - 1);
      if (this.#running.get(attempt.modelKey) === 0) this.#running.delete(attempt.modelKey);
      if (attempt.batch !== null && this.#batchRunning.get(attempt.batch.id) === 0) this.#batchRunning.delete(attempt.batch.id);
      this.#options.residency.finished(attempt.modelKey);
      this.#dispatch();
    };
  }
}

/**
 * The grant of an attempt of `model` sent on with `terms` (the caller told `residency` it started);
 * `release` frees its slots, `onStartTimedOut` hears that its model did not load.
 */
export function grantFor(
  model: string,
  terms: GrantTerms,
  residency: Residency,
  release: () => void,
  onStartTimedOut: () => void = () => {},
): Grant {
  const cold = terms.placement !== 'loaded';
  return {
    release,
    cold,
    placement: terms.placement,
    sendKeepAlive: terms.sendKeepAlive,
    answerBegan: () => cold && residency.loadedOne(model),
    startTimedOut: () => {
      if (!cold) return null;
      residency.startTimedOut(model, terms.beside);
      onStartTimedOut();
      return terms.placement === 'guessed' ? guessedWrong(model, terms.beside) : null;
    },
  };
}

/** Why an attempt sent beside busy models on a guess that they fit, whose answer never began, is not its task's failure. */
export function guessedWrong(model: string, beside: readonly string[]): string {
  return (
    `this server sent ${model} to Ollama beside ${beside.join(', ')}, guessing that they fit in its memory together ` +
    `(a model not yet seen loaded counts at the size of its file, less than it takes once loaded); Ollama held it back ` +
    `until they were done instead. Not counted against the task: a retry waits in this server's queue until ${model} fits`
  );
}
