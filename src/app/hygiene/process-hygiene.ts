import type { Config } from '../../config/config.js';
import type { ModelProcessRequest, ProcessOutcome } from '../../ollama/model-process.js';
import { signalGroup } from '../../ollama/process-group.js';
import path from 'node:path';
import { CHILDREN_DIR_NAME, ChildRegistry } from '../../store/processes/child-registry.js';
import { liveProcView, selfIdentity } from '../../store/processes/proc-reader.js';
import { SharedSlots, type SlotView } from '../../store/slots/shared-slots.js';
import { RedisSlotTable, type SlotRedisConnection } from '../../store/slots/redis-slot-table.js';
import { OrphanSweeper } from './orphan-sweep.js';

type Spawn = (request: ModelProcessRequest) => Promise<ProcessOutcome>;

/** Team mode's Redis connection of a state backend (RedisStateStore), or null for the files. */
export function teamConnectionOf(store: unknown): SlotRedisConnection | null {
  return (store as { connection?: SlotRedisConnection } | null)?.connection ?? null;
}

/** What `ollama_health` shows of the model processes across server processes. */
export interface ProcessesStatus {
  readonly orphanSweep: {
    readonly enabled: boolean;
    readonly reason: string | null;
    readonly intervalMs: number;
    readonly last: { readonly at: number; readonly ended: number; readonly forgotten: number; readonly kept: number } | null;
  };
  readonly shared: {
    readonly limit: number;
    readonly inUse: number;
    readonly slots: readonly SlotView[];
    readonly waitingHere: number;
    readonly error: string | null;
    /** `machines`: team mode, the slots are in Redis. @default 'processes' */
    readonly across?: 'processes' | 'machines';
  } | null;
}

export const NO_PROC_REASON =
  'no /proc on this platform: a process start time cannot be read, so a pid cannot be told from a reused one; a killed server leaves its model processes running';

/**
 * No model process outlives its server: each child is recorded in the state dir while it runs,
 * and recorded children whose server is gone are ended (at start-up and every minute). Also the
 * cap shared by every server process (OLLAMA_MCP_SHARED_CONCURRENCY), when set.
 */
export class ProcessHygiene {
  readonly children: ChildRegistry | null;
  readonly sweeper: OrphanSweeper;
  readonly sharedSlots: SharedSlots | null;
  /** The attempts a dead server left under way (the run service's): settled with the sweeps. */
  attempts: { start(): void; stop(): Promise<void> } | null = null;

  /**
   * `team`: team mode's Redis (OLLAMA_MCP_STATE_URL): the shared cap's slots live there, so the
   * cap holds across machines; else in the telemetry dir.
   */
  constructor(config: Config, warn: (message: string) => void, { team = null }: { team?: SlotRedisConnection | null } = {}) {
    const identity = selfIdentity();
    const proc = liveProcView;
    this.children = identity.hasProc ? new ChildRegistry(config.telemetryDir, identity, warn) : null;
    this.sweeper = new OrphanSweeper({
      dir: path.join(config.telemetryDir, CHILDREN_DIR_NAME),
      identity,
      proc,
      killGraceMs: config.killGraceMs,
      signalGroup,
      warn,
    });
    const limit = config.sharedConcurrency;
    this.sharedSlots =
      limit === null
        ? null
        : team === null
          ? new SharedSlots({ telemetryDir: config.telemetryDir, limit, identity, proc, warn })
          : new SharedSlots({ table: new RedisSlotTable({ connection: team, limit, identity, proc, warn }), warn });
  }

  /** `spawn`, with each child it starts recorded while it runs (unchanged where there is no /proc). */
  trackSpawns(spawn: Spawn): Spawn {
    const children = this.children;
    if (children === null) return spawn;
    return async (request) => {
      let done: (() => void) | null = null;
      try {
        return await spawn({
          ...request,
          onSpawn: (pid) => {
            request.onSpawn?.(pid);
            done = children.track(pid, request.bin, request.args);
          },
        });
      } finally {
        (done as (() => void) | null)?.();
      }
    };
  }

  /** Sweep now and every minute; settle the attempts dead servers left. */
  start(): void {
    this.sweeper.start();
    this.attempts?.start();
  }

  /** Stop sweeping; wait for a sweep under way and for the records of ended children to be removed. */
  async stop(): Promise<void> {
    await this.attempts?.stop();
    await this.sweeper.stop();
    await this.children?.idle();
    await this.sharedSlots?.table.idle?.();
  }

  async status(): Promise<ProcessesStatus> {
    const slots = this.sharedSlots;
    let view: SlotView[] = [];
    let viewError: string | null = null;
    try {
      view = (await slots?.view()) ?? [];
    } catch (error) {
      viewError = `${slots?.table.location}: ${(error as Error).message}`;
    }
    return {
      orphanSweep: {
        enabled: this.sweeper.enabled,
        reason: this.sweeper.enabled ? null : NO_PROC_REASON,
        intervalMs: this.sweeper.intervalMs,
        last: this.sweeper.last,
      },
      shared: slots && {
        limit: slots.limit,
        inUse: view.length,
        slots: view,
        waitingHere: slots.waiting,
        error: slots.lastError ?? viewError,
        across: slots.table instanceof RedisSlotTable ? 'machines' : 'processes',
      },
    };
  }
}
