/**
 * Which Ollama host an attempt goes to. Pure: the host pool (app/queue/host-pool.ts) feeds it what
 * it knows of each host (its queue as the dispatch policy sees it, whether it is down, whether it has
 * the model installed) and sends the attempt where it says.
 *
 * Among the hosts that are not down and have the model installed (a list that could not be read
 * counts as maybe), in order of preference:
 *   1. the model is loaded there and the attempt would start at once (a free parallel slot);
 *   2. the attempt would start at once there with a load that evicts no busy model (a host with free
 *      room before one that must unload an idle model);
 *   3. else the host that will serve it soonest: one that has the model loaded before one that must
 *      load it, then the fewest attempts ahead (waiting and running) per unit of weight.
 * Weights break the remaining ties, then the order of OLLAMA_MCP_HOSTS. A host that is down is chosen
 * only when every host that may have the model is down (the attempt then ends `ollama_unreachable`,
 * as with one host); a host that lacks the model only when no host has it.
 */

import { afterStart, attemptsToStart, type DispatchView, type QueuedAttempt } from './dispatch.js';

/** What the pool knows of one host. */
export interface HostOption {
  /** Its name as OLLAMA_MCP_HOSTS writes it. */
  readonly name: string;
  readonly weight: number;
  /** Skipped for a while: it could not be reached (host-health.ts). */
  readonly down: boolean;
  /** Its `ollama list` has the model; `unknown`: the list could not be read. */
  readonly installed: 'yes' | 'no' | 'unknown';
  /** Its queue, as this server's dispatch policy sees it. */
  readonly view: DispatchView;
  /** Requests of the model this host runs at once. */
  readonly parallel: number;
}

/** Where an attempt goes, and why (for progress and tests). */
export interface HostChoice {
  readonly name: string;
  readonly why: 'pinned' | 'loaded' | 'loadable' | 'soonest' | 'down' | 'not_installed';
}

interface Rank {
  readonly option: HostOption;
  readonly index: number;
  readonly tier: number;
  readonly why: HostChoice['why'];
  /** Loaded models a load there gives up (idle ones). */
  readonly evicts: number;
  /** 0: the model is loaded there; 1: it must be loaded. */
  readonly load: number;
  /** Attempts ahead per unit of weight. */
  readonly ahead: number;
}

/** The host for an attempt of `modelKey`, or null when there is none; `pinned`: the host the call named. */
export function chooseHost(options: readonly HostOption[], modelKey: string, pinned: string | null): HostChoice | null {
  if (pinned !== null) return options.some((o) => o.name === pinned) ? { name: pinned, why: 'pinned' } : null;
  const ranks = options.map((option, index) => rankOf(option, index, modelKey));
  ranks.sort(
    (a, b) =>
      a.tier - b.tier ||
      a.evicts - b.evicts ||
      a.load - b.load ||
      a.ahead - b.ahead ||
      b.option.weight - a.option.weight ||
      a.index - b.index,
  );
  const best = ranks[0];
  return best === undefined ? null : { name: best.option.name, why: best.why };
}

/** Is there a host other than `except`, not down, that may have `modelKey` (installed, or a list that could not be read)? */
export function otherHostCanServe(options: readonly HostOption[], except: string): boolean {
  return options.some((o) => o.name !== except && !o.down && o.installed !== 'no');
}

function rankOf(option: HostOption, index: number, modelKey: string): Rank {
  const { view } = option;
  const running = [...view.running.values()].reduce((sum, n) => sum + n, 0);
  const ahead = (view.waiting.length + running) / option.weight;
  const loaded = view.loaded.includes(modelKey);
  const base = { option, index, ahead, load: loaded ? 0 : 1, evicts: 0 };
  if (option.installed === 'no') return { ...base, tier: 4, why: 'not_installed' };
  if (option.down) return { ...base, tier: 3, why: 'down' };
  const probe: QueuedAttempt = { id: -1, modelKey, parallel: option.parallel, since: view.now, batch: null };
  const withProbe: DispatchView = { ...view, waiting: [...view.waiting, probe] };
  if (!attemptsToStart(withProbe).includes(probe)) return { ...base, tier: 2, why: 'soonest' };
  if (loaded) return { ...base, tier: 0, why: 'loaded' };
  const after = afterStart(withProbe, probe);
  const evicts = view.loaded.filter((model) => !after.loaded.includes(model)).length;
  return { ...base, tier: 1, why: 'loadable', evicts };
}
