/**
 * Which waiting attempt to send to Ollama next. Pure: the dispatcher (app/dispatcher.ts) feeds it what
 * it knows and starts what it picks.
 *
 * Ollama runs `parallel` requests of a loaded model at once and keeps as many models loaded as its
 * room allows (a count the user set, or what fits in the memory learned from sizes: memory-fit.ts);
 * a request beyond either waits inside Ollama, where it is invisible, cannot be cancelled without
 * aborting a load, and (worse) is timed by its caller. So an attempt is sent only when Ollama will run it
 * now: its model is loaded and has a free parallel slot, or it can be loaded beside the busy models
 * (Ollama unloads idle ones to make room). Among the attempts that can start, those for a loaded model go first (a load
 * costs seconds to a minute); the oldest first within each kind. An attempt for a model that is not
 * loaded waits behind the loaded models' attempts until their queues are empty, or until it has waited
 * `switchAfterMs` since its model was last served: then the loaded model with the fewest attempts in
 * flight gets no new ones, and once it is idle the waiting model takes its place. A busy model can
 * therefore hold another off for at most `switchAfterMs` plus the attempts already running on it.
 */

import { fitOf, type MemoryView } from './memory-fit.js';

/** How many models Ollama keeps loaded together. */
export type Room =
  /** A number of models, whatever their sizes (OLLAMA_MAX_LOADED_MODELS, set by the user). */
  | { readonly kind: 'count'; readonly capacity: number }
  /** As many as fit in the memory learned from `ollama ps` (memory-fit.ts). */
  | { readonly kind: 'memory'; readonly memory: MemoryView };

/**
 * Where a started attempt's model stands in Ollama: `loaded` already; loading `alone` (no busy model
 * beside it: Ollama unloads idle ones as it needs); or loading beside busy models that it was
 * `known` to fit with (sizes seen, or a count the user set), or only `guessed` to (a size that is a
 * lower bound). A guess that proves wrong makes Ollama hold the attempt until the busy models are done.
 */
export type Placement = 'loaded' | 'alone' | 'known' | 'guessed';

/** An attempt waiting for its turn. */
export interface QueuedAttempt {
  readonly id: number;
  readonly modelKey: string;
  /** Requests of its model Ollama runs at once. */
  readonly parallel: number;
  /** When it joined the queue (ms, monotonic). */
  readonly since: number;
  /** The batch (`ollama_run_many`) it belongs to, and that batch's limit on its jobs at once. */
  readonly batch: { readonly id: string; readonly limit: number } | null;
  /**
   * In a queue shared by several servers (shared-queue.ts): the server that sent it, and that server's
   * limit on its attempts in flight (its OLLAMA_MCP_CONCURRENCY). Absent: the view is one server's.
   */
  readonly server?: { readonly id: string; readonly limit: number };
}

/** What the dispatcher knows when it chooses. */
export interface DispatchView {
  /** ms, monotonic. */
  readonly now: number;
  /** Attempts waiting, in the order they arrived. */
  readonly waiting: readonly QueuedAttempt[];
  /** This server's attempts in flight, per model. */
  readonly running: ReadonlyMap<string, number>;
  /** This server's attempts in flight, per batch. */
  readonly batchRunning: ReadonlyMap<string, number>;
  /** In a shared queue: the attempts in flight per server (see QueuedAttempt.server). */
  readonly serverRunning?: ReadonlyMap<string, number>;
  /** Models believed loaded in Ollama, least recently used first. */
  readonly loaded: readonly string[];
  /** When an attempt of each model was last started (ms, monotonic); absent: never. */
  readonly lastStarted: ReadonlyMap<string, number>;
  /** How many models Ollama keeps loaded together. */
  readonly room: Room;
  /** This server's attempts in flight at most (OLLAMA_MCP_CONCURRENCY); Infinity in a shared queue, where each server's limit is its attempts'. */
  readonly concurrency: number;
  /** How long an attempt for a model that is not loaded waits before the server switches models. */
  readonly switchAfterMs: number;
}

/** Why an attempt is still waiting, for progress messages. */
export type WaitReason =
  /** The server runs `concurrency` attempts already. */
  | { readonly kind: 'concurrency'; readonly ahead: number }
  /** Its model runs `parallel` attempts already; `ahead` more of its attempts wait before it. */
  | { readonly kind: 'parallel'; readonly running: number; readonly ahead: number }
  /** Its batch runs as many jobs as it may. */
  | { readonly kind: 'batch' }
  /**
   * Its model does not fit beside the busy models: it waits for `loaded` to finish their attempts, or
   * for the switch in `switchInMs` (0: the switch is under way, the busy model takes no new attempts).
   */
  | { readonly kind: 'load'; readonly loaded: readonly string[]; readonly switchInMs: number }
  /** Its model is the one being unloaded for an attempt that waited longer. */
  | { readonly kind: 'unloading'; readonly for: string };

const count = (map: ReadonlyMap<string, number>, key: string): number => map.get(key) ?? 0;

const totalRunning = (view: DispatchView): number => [...view.running.values()].reduce((sum, n) => sum + n, 0);

/** Is `attempt`'s server (in a shared queue) running as many attempts as it may? */
function serverFull(view: DispatchView, attempt: QueuedAttempt): boolean {
  const { server } = attempt;
  return server !== undefined && count(view.serverRunning ?? new Map(), server.id) >= server.limit;
}

/** Can `attempt` take a slot of its model, of its batch and of its server? */
function hasSlot(view: DispatchView, attempt: QueuedAttempt): boolean {
  if (count(view.running, attempt.modelKey) >= attempt.parallel || serverFull(view, attempt)) return false;
  return attempt.batch === null || count(view.batchRunning, attempt.batch.id) < attempt.batch.limit;
}

/** The loaded models other than `model` with attempts in flight: Ollama cannot unload them now. */
export function busyBeside(view: DispatchView, model: string): string[] {
  return view.loaded.filter((loaded) => loaded !== model && count(view.running, loaded) > 0);
}

/** Can `model` be loaded now without Ollama waiting for a busy model: a free place, or idle models to replace? */
function canLoad(view: DispatchView, model: string): boolean {
  if (view.loaded.includes(model)) return true;
  const { room } = view;
  if (room.kind === 'count') return view.loaded.length < room.capacity || view.loaded.some((m) => count(view.running, m) === 0);
  return fitOf(room.memory, [...busyBeside(view, model), model]) !== 'no';
}

/** How an attempt for `model` would be placed if it started now (see {@link Placement}). */
export function placementOf(view: DispatchView, model: string): Placement {
  if (view.loaded.includes(model)) return 'loaded';
  const busy = busyBeside(view, model);
  if (busy.length === 0) return 'alone';
  if (view.room.kind === 'count') return 'known';
  return fitOf(view.room.memory, [...busy, model]) === 'known' ? 'known' : 'guessed';
}

/** Do `loaded` exceed the room (then Ollama has unloaded an idle one)? */
function overRoom(room: Room, loaded: readonly string[]): boolean {
  return room.kind === 'count' ? loaded.length > room.capacity : fitOf(room.memory, loaded) === 'no';
}

/** How long `attempt` has waited for its model to be served: since it arrived, or since its model last started an attempt. */
function waitedForModel(view: DispatchView, attempt: QueuedAttempt): number {
  return view.now - Math.max(attempt.since, view.lastStarted.get(attempt.modelKey) ?? -Infinity);
}

/** The oldest attempt for a model that is not loaded that has waited past the switch bound, if any. */
function overdueCall(view: DispatchView): QueuedAttempt | undefined {
  return view.waiting.find(
    (attempt) =>
      !view.loaded.includes(attempt.modelKey) && hasSlot(view, attempt) && waitedForModel(view, attempt) >= view.switchAfterMs,
  );
}

/** The loaded model to unload for an overdue attempt: the one with the fewest attempts in flight, least recently used on a tie. */
function modelToUnload(view: DispatchView): string | undefined {
  let best: string | undefined;
  for (const model of view.loaded) {
    if (best === undefined || count(view.running, model) < count(view.running, best)) best = model;
  }
  return best;
}

/** The attempt to start now, or null when none should. */
function nextToStart(view: DispatchView): QueuedAttempt | null {
  if (totalRunning(view) >= view.concurrency) return null;
  const overdue = overdueCall(view);
  let unloading: string | undefined;
  if (overdue !== undefined) {
    if (canLoad(view, overdue.modelKey)) return overdue;
    unloading = modelToUnload(view);
  }
  const loaded = view.waiting.find(
    (attempt) => attempt.modelKey !== unloading && view.loaded.includes(attempt.modelKey) && hasSlot(view, attempt),
  );
  if (loaded !== undefined) return loaded;
  if (unloading !== undefined) return null; // the overdue attempt goes first once the model it replaces is idle
  return view.waiting.find((attempt) => hasSlot(view, attempt) && canLoad(view, attempt.modelKey)) ?? null;
}

/** The view once `attempt` has started: its slots taken, its model loaded (idle models given up, least recently used first, while over the room). */
export function afterStart(view: DispatchView, attempt: QueuedAttempt): DispatchView {
  const running = new Map(view.running).set(attempt.modelKey, count(view.running, attempt.modelKey) + 1);
  const { batch } = attempt;
  const batchRunning =
    batch === null ? view.batchRunning : new Map(view.batchRunning).set(batch.id, count(view.batchRunning, batch.id) + 1);
  const { server } = attempt;
  const serverRunning =
    server === undefined
      ? view.serverRunning
      : new Map(view.serverRunning).set(server.id, count(view.serverRunning ?? new Map(), server.id) + 1);
  let loaded = [...view.loaded.filter((model) => model !== attempt.modelKey), attempt.modelKey];
  while (overRoom(view.room, loaded)) {
    const idle = loaded.find((model) => count(running, model) === 0);
    if (idle === undefined) break;
    loaded = loaded.filter((model) => model !== idle);
  }
  return {
    ...view,
    waiting: view.waiting.filter((waiting) => waiting !== attempt),
    running,
    batchRunning,
    ...(serverRunning === undefined ? {} : { serverRunning }),
    loaded,
    lastStarted: new Map(view.lastStarted).set(attempt.modelKey, view.now),
  };
}

/** Every attempt to start now, in order. */
export function attemptsToStart(view: DispatchView): QueuedAttempt[] {
  const started: QueuedAttempt[] = [];
  for (let next = nextToStart(view); next !== null; next = nextToStart(view)) {
    started.push(next);
    view = afterStart(view, next);
  }
  return started;
}

/** Why `attempt` (still waiting after {@link attemptsToStart}) waits. */
export function whyWaiting(view: DispatchView, attempt: QueuedAttempt): WaitReason {
  const ahead = Math.max(0, view.waiting.indexOf(attempt));
  const overdue = overdueCall(view);
  const unloading = overdue !== undefined && !canLoad(view, overdue.modelKey) ? modelToUnload(view) : undefined;
  if (unloading === attempt.modelKey && overdue !== undefined) return { kind: 'unloading', for: overdue.modelKey };
  const running = count(view.running, attempt.modelKey);
  if (running >= attempt.parallel) {
    const before = view.waiting.slice(0, ahead).filter((other) => other.modelKey === attempt.modelKey).length;
    return { kind: 'parallel', running, ahead: before };
  }
  if (totalRunning(view) >= view.concurrency) return { kind: 'concurrency', ahead };
  if (serverFull(view, attempt)) {
    const own = view.waiting.slice(0, ahead).filter((other) => other.server?.id === attempt.server?.id).length;
    return { kind: 'concurrency', ahead: own };
  }
  if (!hasSlot(view, attempt)) return { kind: 'batch' };
  const others = busyBeside(view, attempt.modelKey);
  const switchInMs = overdue === attempt ? 0 : Math.max(0, view.switchAfterMs - waitedForModel(view, attempt));
  return { kind: 'load', loaded: others, switchInMs };
}

/** When a waiting attempt becomes overdue and the order may change, in ms from `view.now`; null when none will. */
export function nextSwitchInMs(view: DispatchView): number | null {
  let soonest: number | null = null;
  for (const attempt of view.waiting) {
    if (view.loaded.includes(attempt.modelKey)) continue;
    const left = view.switchAfterMs - waitedForModel(view, attempt);
    if (left > 0 && (soonest === null || left < soonest)) soonest = left;
  }
  return soonest;
}
