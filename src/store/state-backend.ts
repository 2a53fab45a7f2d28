import type { BreakerState } from '../policy/breaker-state.js';
import type { TaskLedgerEntry } from '../policy/task-ledger.js';

/** The state the policies work on: task ledgers and model circuits (a view over several files). */
export interface StateData {
  tasks: Record<string, TaskLedgerEntry>;
  breakers: Record<string, BreakerState>;
  /** When old task entries were last pruned (epoch ms): when the next prune is due. */
  prunedAt: number;
  /** The time that prune judged ages by (epoch ms; 0: none yet): see `pruneClock` in policy/task-ledger.ts. */
  prunedAsOf: number;
}

/**
 * A map keyed by user input (task ids, model names) with no prototype: `constructor`, `toString`
 * or `__proto__` are then ordinary keys, not Object.prototype's members.
 */
export function dict<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** Which tasks a transaction reads and writes: the ids it touches, or every task (pruning). */
export type TaskScope = readonly string[] | 'all';

/** The last transaction that could not be saved, while no later one was. */
export interface StoreWriteFailure {
  /** Epoch ms. */
  readonly at: number;
  readonly message: string;
}

/**
 * Where the task ledger and the circuits live: what the attempt ledger, `ollama_reset`,
 * `ollama_task_status`, `ollama_health` and `doctor` need of it. Two implementations:
 * `StateStore` (files in the telemetry dir, the default) and `RedisStateStore` (one Redis shared
 * by several servers: team mode, `OLLAMA_MCP_STATE_URL`). The policy code applied inside
 * `transact` is the same pure code for both.
 *
 * Other state shared in team mode (the cross-machine cap of OLLAMA_MCP_SHARED_CONCURRENCY) belongs
 * on the same Redis: `RedisStateStore.connection` gives its client and key names under the prefix.
 */
export interface StateBackend {
  /**
   * The circuits and the tasks in `scope` as last saved, read without a transaction.
   * Treat it as read-only and do not keep it.
   */
  snapshot(scope?: TaskScope): Promise<StateData>;
  /**
   * Apply `fn` to the latest state and save what it changed, atomically for every process
   * sharing the state (other servers included). `fn` sees every circuit and the tasks in `scope`;
   * it mutates the state, returns a value, is synchronous and does no I/O, and may be called more
   * than once (a backend that detects a conflict runs it again on the newer state).
   * Rejects with a `StateStoreError` when the state cannot be read or written.
   */
  transact<T>(scope: TaskScope, fn: (state: StateData) => T): Promise<T>;
  /** Set when the last transaction could not be saved (cleared by the next one that is). */
  readonly lastWriteFailure: StoreWriteFailure | null;
  /** One line per problem that keeps the state from being read or written; empty when it works. */
  inspect(): Promise<string[]>;
}

/** What `ollama_health` / `doctor` say about where the state lives. */
export interface StateBackendStatus {
  readonly kind: 'files' | 'redis';
  /** The state file, or the Redis URL with its password replaced by `***`. */
  readonly location: string;
  /** Could it be reached just now? null for files (the ledger check says whether they work). */
  readonly reachable: boolean | null;
  /** Why it could not be reached. */
  readonly error: string | null;
}

/** A backend that can report on itself (the Redis one); files are described by the health check. */
export interface DescribedStateBackend extends StateBackend {
  status(): Promise<StateBackendStatus>;
  /** Stop reconnecting and close the connection (doctor, tests); the backend is unusable after. */
  close(): Promise<void>;
}

export function isDescribedBackend(backend: unknown): backend is DescribedStateBackend {
  return typeof (backend as DescribedStateBackend | null)?.status === 'function';
}
