import { livenessOf, type ProcessPlace, type ProcView } from '../../policy/process-identity.js';
import type { Holder } from '../holder.js';
import type { SelfIdentity } from '../processes/proc-reader.js';

/** One slot as `ollama_health` shows it. */
export interface SlotView {
  readonly slot: number;
  readonly pid: number | null;
  readonly since: string | null;
  /** The host name of the holder (team mode: holders on other machines too). */
  readonly host: string | null;
  /** `unknown`: held from another host or pid namespace; `unreadable`: not a holder this server wrote. */
  readonly holder: 'this_server' | 'alive' | 'dead' | 'unknown' | 'unreadable';
}

/** A taken slot as `view` shows it; `holder` null when it is not a holder this server writes. */
export function slotView(slot: number, holder: Holder | null, mine: boolean, here: ProcessPlace, proc: ProcView): SlotView {
  if (holder === null) return { slot, pid: null, host: null, since: null, holder: 'unreadable' };
  const state = mine ? 'this_server' : livenessOf(holder, here, proc);
  return { slot, pid: holder.pid, host: holder.host, since: new Date(holder.at).toISOString(), holder: state };
}

export interface SlotTableOptions {
  /** OLLAMA_MCP_SHARED_CONCURRENCY. */
  readonly limit: number;
  readonly identity: SelfIdentity;
  readonly proc: ProcView;
  /** A slot reclaimed, or a lease lost. */
  readonly warn: (message: string) => void;
}

/** Frees a slot. Calling it twice is harmless. */
export type ReleaseSharedSlot = () => void;

/**
 * Where the slots live and how one is taken: the files of the state dir (one machine), or a
 * Redis shared by every server of a team (store/slots/redis-slot-table.ts). SharedSlots keeps the
 * queue, the polling and the abort logic, the same for both.
 */
export interface SlotTable {
  /** OLLAMA_MCP_SHARED_CONCURRENCY. */
  readonly limit: number;
  /** Where the slots are, for messages: the slots dir, or the Redis URL without its password. */
  readonly location: string;
  /** Who shares the cap, for messages: `server processes` or `servers on every machine`. */
  readonly sharedBy: string;
  /** Take a free slot: its release (harmless twice), or null when all are taken. Throws when the slots cannot be used. */
  claim(): ReleaseSharedSlot | null | Promise<ReleaseSharedSlot | null>;
  /** Free the slots of holders known to be dead; how many were freed. */
  reclaim(): number | Promise<number>;
  /** Every slot held now, and who holds it. */
  view(): SlotView[] | Promise<SlotView[]>;
  /** Tell other servers this process's oldest call waits since `since` (null: none waits). */
  markWaiting(since: number | null): void;
  /** Whether a call of another server has waited since before `since` (it goes first). */
  olderWaiterElsewhere(since: number): boolean;
  /** At shutdown, after the runs ended: wait for their releases to be done. */
  idle?(): Promise<void>;
}
