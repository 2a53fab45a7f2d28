/**
 * The queue every server in front of one Ollama shares: each server's waiting and running attempts,
 * what Ollama has loaded, and the last `ollama ps` answer, as one document (a file of the data dir, or
 * a Redis key in team mode: store/queue/). Pure: each change is a function from the document, the time
 * and the context to the next document; the store applies it under its lock.
 *
 * A decision applies the one dispatch policy (dispatch.ts) to the union of every server's attempts and
 * grants what may start, whichever server the attempts came from: their server starts them when it
 * next reads the document. Servers that are gone (dead by pid and start time, or silent past the lease)
 * are dropped with their attempts, so they hold no one off for longer than the lease.
 *
 * Times are in one clock shared by every server of the document: CLOCK_MONOTONIC on one machine (it
 * never steps), Redis's TIME in team mode.
 */

import {
  afterStart,
  attemptsToStart,
  busyBeside,
  nextSwitchInMs,
  placementOf,
  whyWaiting,
  type DispatchView,
  type Placement,
  type QueuedAttempt,
  type Room,
  type WaitReason,
} from './dispatch.js';
import type { ProcessId, ProcessPlace } from './process-identity.js';

/** `keepAliveMs` of a model Ollama keeps loaded forever (Ollama's own keep_alive for it). */
export const FOREVER = -1;

/** A keep-alive in ms as the queue writes it: Infinity (forever) as {@link FOREVER}, which JSON can hold. */
export function queueKeepAlive(ms: number): number {
  return ms === Infinity ? FOREVER : ms;
}

/** A server with attempts in the queue. */
export interface QueueServer extends ProcessId, ProcessPlace {
  /** When it last wrote to the queue. */
  readonly seenAt: number;
  /** Its attempts in flight at most (its OLLAMA_MCP_CONCURRENCY). */
  readonly concurrency: number;
}

/** An attempt waiting for its grant. */
export interface QueueEntry {
  /** Unique in the queue: its server's key, `#`, a number. */
  readonly id: string;
  readonly server: string;
  readonly model: string;
  /** Requests of its model Ollama runs at once. */
  readonly parallel: number;
  /** When it joined the queue. */
  readonly since: number;
  /** Its batch (an id unique in the queue) and the batch's limit on its jobs at once. */
  readonly batch: { readonly id: string; readonly limit: number } | null;
  /** The keep-alive it asks Ollama for, in ms ({@link FOREVER}); absent: Ollama's default. */
  readonly keepAliveMs?: number;
}

/** How a granted attempt is sent on (see Grant in app/queue/dispatcher.ts). */
export interface GrantTerms {
  readonly placement: Placement;
  /** Busy models beside which its model is loaded. */
  readonly beside: readonly string[];
  /** Models given up to make room for its model. */
  readonly evicted: readonly string[];
  /** Whether it sends its keep-alive (not while attempts for other models wait). */
  readonly sendKeepAlive: boolean;
}

/** An attempt granted: it runs in Ollama (or is about to), until its server finishes it. */
export interface GrantedEntry extends QueueEntry {
  readonly grantedAt: number;
  readonly terms: GrantTerms;
}

export interface LoadedModel {
  readonly model: string;
  /** When its last attempt ended, or started while none ended since. */
  readonly lastUsed: number;
  /** How long Ollama keeps it once idle ({@link FOREVER}). */
  readonly keepAliveMs: number;
}

/** What `ollama ps` said, and when it was asked. */
export interface PsAnswer {
  readonly askedAt: number;
  readonly models: readonly string[];
  readonly sizes: Readonly<Record<string, number>>;
}

export interface SharedQueue {
  readonly servers: Readonly<Record<string, QueueServer>>;
  /** In the order they joined (a decision orders them by `since`, keeping that order among equals). */
  readonly waiting: readonly QueueEntry[];
  readonly running: readonly GrantedEntry[];
  /** Least recently used first. */
  readonly loaded: readonly LoadedModel[];
  readonly lastStarted: Readonly<Record<string, number>>;
  /** The last `ollama ps` answer, and who is asking it now (one reader at a time). */
  readonly ps: { readonly last: PsAnswer | null; readonly asking: { readonly server: string; readonly since: number } | null };
}

export const EMPTY_QUEUE: SharedQueue = {
  servers: {},
  waiting: [],
  running: [],
  loaded: [],
  lastStarted: {},
  ps: { last: null, asking: null },
};

/** What a decision needs beyond the queue: the same for every server of one Ollama. */
export interface DecideContext {
  readonly now: number;
  readonly room: Room;
  readonly switchAfterMs: number;
  /** OLLAMA_KEEP_ALIVE in ms ({@link FOREVER}). */
  readonly defaultKeepAliveMs: number;
}

/** `server` joins or stays: its record written with the time. */
export function touchServer(queue: SharedQueue, key: string, server: Omit<QueueServer, 'seenAt'>, now: number): SharedQueue {
  return { ...queue, servers: { ...queue.servers, [key]: { ...server, seenAt: now } } };
}

/** A server with nothing in the queue leaves it. */
export function dropIdleServer(queue: SharedQueue, key: string): SharedQueue {
  if (queue.waiting.some((e) => e.server === key) || queue.running.some((e) => e.server === key)) return queue;
  if (!(key in queue.servers)) return queue;
  const { [key]: _gone, ...servers } = queue.servers;
  return { ...queue, servers };
}

export function addWaiting(queue: SharedQueue, entry: QueueEntry): SharedQueue {
  return { ...queue, waiting: [...queue.waiting, entry] };
}

/**
 * The attempt `id` leaves the queue: aborted while waiting, or finished after its grant (then its
 * model's keep-alive runs from now).
 */
export function removeEntry(queue: SharedQueue, id: string, now: number): SharedQueue {
  const finished = queue.running.find((entry) => entry.id === id);
  if (finished === undefined) return { ...queue, waiting: queue.waiting.filter((entry) => entry.id !== id) };
  return {
    ...queue,
    running: queue.running.filter((entry) => entry !== finished),
    loaded: queue.loaded.map((loaded) => (loaded.model === finished.model ? { ...loaded, lastUsed: now } : loaded)),
  };
}

/** How a server of the queue is judged: `gone` drops it with its attempts. */
export type ServerJudge = (key: string, server: QueueServer) => 'here' | 'gone';

/** Drop the servers `judge` finds gone, or silent for longer than `leaseMs`, with their attempts; and say which. */
export function dropGoneServers(
  queue: SharedQueue,
  now: number,
  leaseMs: number,
  judge: ServerJudge,
): { queue: SharedQueue; gone: string[] } {
  const gone = Object.entries(queue.servers)
    .filter(([key, server]) => now - server.seenAt > leaseMs || judge(key, server) === 'gone')
    .map(([key]) => key);
  if (gone.length === 0) return { queue, gone };
  const servers = Object.fromEntries(Object.entries(queue.servers).filter(([key]) => !gone.includes(key)));
  const asking = queue.ps.asking !== null && gone.includes(queue.ps.asking.server) ? null : queue.ps.asking;
  const kept = (entry: QueueEntry) => !gone.includes(entry.server);
  return {
    queue: {
      ...queue,
      servers,
      waiting: queue.waiting.filter(kept),
      running: queue.running.filter(kept),
      ps: { ...queue.ps, asking },
    },
    gone,
  };
}

function keepAliveOf(ms: number): number {
  return ms === FOREVER ? Infinity : ms;
}

/** The models loaded now, least recently used first: idle ones past their keep-alive are gone, busy ones always count. */
function loadedNow(queue: SharedQueue, now: number, defaultKeepAliveMs: number): LoadedModel[] {
  const busy = new Set(queue.running.map((entry) => entry.model));
  const loaded = queue.loaded.filter((m) => busy.has(m.model) || now - m.lastUsed <= keepAliveOf(m.keepAliveMs));
  for (const model of busy) {
    if (!loaded.some((m) => m.model === model)) loaded.push({ model, lastUsed: now, keepAliveMs: defaultKeepAliveMs });
  }
  return loaded;
}

function countBy<T>(items: readonly T[], key: (item: T) => string | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

/** The waiting attempts in the order they arrived: by `since`, and as they joined when they joined at once. */
function inArrivalOrder(waiting: readonly QueueEntry[]): QueueEntry[] {
  return [...waiting].sort((a, b) => a.since - b.since); // stable: the queue keeps them in the order they joined
}

/** The dispatch policy's view of the whole queue, and which entry each of its attempts is. */
export function unionView(
  queue: SharedQueue,
  context: DecideContext,
): { view: DispatchView; entries: Map<QueuedAttempt, QueueEntry> } {
  const entries = new Map<QueuedAttempt, QueueEntry>();
  const waiting = inArrivalOrder(queue.waiting).map((entry, index) => {
    const limit = queue.servers[entry.server]?.concurrency ?? 1;
    const attempt: QueuedAttempt = {
      id: index,
      modelKey: entry.model,
      parallel: entry.parallel,
      since: entry.since,
      batch: entry.batch,
      server: { id: entry.server, limit },
    };
    entries.set(attempt, entry);
    return attempt;
  });
  const view: DispatchView = {
    now: context.now,
    waiting,
    running: countBy(queue.running, (entry) => entry.model),
    batchRunning: countBy(queue.running, (entry) => entry.batch?.id),
    serverRunning: countBy(queue.running, (entry) => entry.server),
    loaded: loadedNow(queue, context.now, context.defaultKeepAliveMs).map((m) => m.model),
    lastStarted: new Map(Object.entries(queue.lastStarted)),
    room: context.room,
    concurrency: Infinity,
    switchAfterMs: context.switchAfterMs,
  };
  return { view, entries };
}

/** Grant every attempt of the queue that may start now, whichever server sent it. */
export function decide(queue: SharedQueue, context: DecideContext): { queue: SharedQueue; granted: GrantedEntry[] } {
  const { now } = context;
  const union = unionView(queue, context);
  let view = union.view;
  let loaded = loadedNow(queue, now, context.defaultKeepAliveMs);
  const granted: GrantedEntry[] = [];
  for (const attempt of attemptsToStart(view)) {
    const entry = union.entries.get(attempt)!;
    const next = afterStart(view, attempt);
    const sendKeepAlive = !next.waiting.some((other) => other.modelKey !== attempt.modelKey);
    const terms: GrantTerms = {
      placement: placementOf(view, entry.model),
      beside: busyBeside(view, entry.model),
      evicted: view.loaded.filter((model) => model !== entry.model && !next.loaded.includes(model)),
      sendKeepAlive,
    };
    granted.push({ ...entry, grantedAt: now, terms });
    const before = loaded.find((m) => m.model === entry.model);
    const keepAliveMs = (sendKeepAlive ? entry.keepAliveMs : undefined) ?? before?.keepAliveMs ?? context.defaultKeepAliveMs;
    loaded = next.loaded.map((model) =>
      model === entry.model ? { model, lastUsed: now, keepAliveMs } : loaded.find((m) => m.model === model)!,
    );
    view = next;
  }
  if (granted.length === 0) return { queue, granted };
  const ids = new Set(granted.map((entry) => entry.id));
  const lastStarted = { ...queue.lastStarted };
  for (const entry of granted) lastStarted[entry.model] = now;
  return {
    queue: {
      ...queue,
      waiting: queue.waiting.filter((entry) => !ids.has(entry.id)),
      running: [...queue.running, ...granted],
      loaded,
      lastStarted,
    },
    granted,
  };
}

/** When a decision may change next without anything joining or leaving (an attempt becoming overdue), in ms; null: never. */
export function nextDecisionInMs(queue: SharedQueue, context: DecideContext): number | null {
  return nextSwitchInMs(unionView(queue, context).view);
}

/** Why the waiting attempt `id` waits, and the other servers' attempts it waits behind. */
export function whyEntryWaits(
  queue: SharedQueue,
  id: string,
  context: DecideContext,
): { reason: WaitReason; elsewhere: Elsewhere | null } | null {
  const { view, entries } = unionView(queue, context);
  const attempt = [...entries].find(([, entry]) => entry.id === id)?.[0];
  if (attempt === undefined) return null;
  const reason = whyWaiting(view, attempt);
  const entry = entries.get(attempt)!;
  return { reason, elsewhere: elsewhereFor(queue, entry, blockingModels(reason, entry.model)) };
}

/** The attempts of other servers an attempt waits behind: the most of one model among `models`. */
export interface Elsewhere {
  readonly calls: number;
  readonly model: string;
}

function blockingModels(reason: WaitReason, model: string): readonly string[] {
  switch (reason.kind) {
    case 'load':
      return reason.loaded;
    case 'parallel':
    case 'unloading':
      return [model];
    default:
      return [];
  }
}

/** Other servers' attempts for `models`, running or waiting since before `entry`: the model with the most. */
function elsewhereFor(queue: SharedQueue, entry: QueueEntry, models: readonly string[]): Elsewhere | null {
  let best: Elsewhere | null = null;
  for (const model of models) {
    const theirs = (other: QueueEntry) => other.server !== entry.server && other.model === model;
    const calls =
      queue.running.filter(theirs).length + queue.waiting.filter((other) => theirs(other) && other.since <= entry.since).length;
    if (calls > 0 && (best === null || calls > best.calls)) best = { calls, model };
  }
  return best;
}

/**
 * `ollama ps` answered (asked at `answer.askedAt`): what it shows is loaded. Models the queue believed
 * loaded that it does not show are gone; models it shows that the queue did not know (loaded by another
 * client) count as the least recently used.
 */
export function observePs(
  queue: SharedQueue,
  answer: PsAnswer,
  context: Pick<DecideContext, 'now' | 'defaultKeepAliveMs'>,
): SharedQueue {
  const known = queue.loaded.filter((m) => answer.models.includes(m.model));
  const unknown = answer.models
    .filter((model) => !known.some((m) => m.model === model))
    .map((model) => ({ model, lastUsed: context.now, keepAliveMs: context.defaultKeepAliveMs }));
  return { ...queue, loaded: [...unknown, ...known], ps: { last: answer, asking: null } };
}

/** An attempt of `model` saw no answer begin within its start allowance: the model is not loaded (its load was aborted). */
export function forgetLoaded(queue: SharedQueue, model: string): SharedQueue {
  return { ...queue, loaded: queue.loaded.filter((m) => m.model !== model) };
}

/**
 * The queue with its times moved back when its clock stepped back (a time of the queue lies ahead of
 * `now`): every time moves by the same amount, so the order of the calls and every wait and lease
 * so far are kept. (On one machine the clock never steps; in team mode it is Redis's.)
 */
export function afterClockStep(queue: SharedQueue, now: number): SharedQueue {
  const times = [
    ...Object.values(queue.servers).map((s) => s.seenAt),
    ...queue.waiting.map((e) => e.since),
    ...queue.running.map((e) => Math.max(e.since, e.grantedAt)),
    ...queue.loaded.map((m) => m.lastUsed),
    ...Object.values(queue.lastStarted),
    ...(queue.ps.last === null ? [] : [queue.ps.last.askedAt]),
    ...(queue.ps.asking === null ? [] : [queue.ps.asking.since]),
  ];
  const ahead = Math.max(0, ...times) - now;
  if (ahead <= 0) return queue;
  const back = (t: number) => t - ahead;
  return {
    servers: Object.fromEntries(Object.entries(queue.servers).map(([k, s]) => [k, { ...s, seenAt: back(s.seenAt) }])),
    waiting: queue.waiting.map((e) => ({ ...e, since: back(e.since) })),
    running: queue.running.map((e) => ({ ...e, since: back(e.since), grantedAt: back(e.grantedAt) })),
    loaded: queue.loaded.map((m) => ({ ...m, lastUsed: back(m.lastUsed) })),
    lastStarted: Object.fromEntries(Object.entries(queue.lastStarted).map(([k, t]) => [k, back(t)])),
    ps: {
      last: queue.ps.last === null ? null : { ...queue.ps.last, askedAt: back(queue.ps.last.askedAt) },
      asking: queue.ps.asking === null ? null : { ...queue.ps.asking, since: back(queue.ps.asking.since) },
    },
  };
}

/** A granted attempt its server still runs, missing from the queue (its server was taken for gone): back in. */
export function addRunning(queue: SharedQueue, entry: GrantedEntry): SharedQueue {
  if (queue.running.some((e) => e.id === entry.id)) return queue;
  return { ...queue, running: [...queue.running, entry], waiting: queue.waiting.filter((e) => e.id !== entry.id) };
}
