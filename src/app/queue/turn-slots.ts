import type { QueueReason } from './queue-reason.js';
import type { SharedSlots } from '../../store/slots/shared-slots.js';
import type { DispatchQueue, DispatchRequest, Grant } from './dispatcher.js';

/** An attempt's place in line for everything it needs before it spawns. */
interface SlotTicket {
  readonly granted: Promise<Grant>;
  /** Why it still waits; null once it has every slot. */
  reason(): QueueReason | null;
}

/**
 * The slots an attempt takes before it spawns: its turn from this server's dispatcher, then, when
 * OLLAMA_MCP_SHARED_CONCURRENCY is set, one of the slots shared by every server process
 * (store/slots/shared-slots.ts). Released together; a refused second slot gives the first back.
 */
export class TurnSlots {
  readonly #dispatcher: DispatchQueue;
  readonly #shared: SharedSlots | null;

  constructor(dispatcher: DispatchQueue, shared: SharedSlots | null) {
    this.#dispatcher = dispatcher;
    this.#shared = shared;
  }

  request(request: DispatchRequest, signal: AbortSignal | undefined): SlotTicket {
    const turn = this.#dispatcher.request(request, signal);
    const shared = this.#shared;
    if (shared === null) return turn;
    let second: ReturnType<SharedSlots['request']> | null = null;
    const granted = turn.granted.then(async (grant) => {
      second = shared.request(signal);
      try {
        const releaseShared = await second.granted;
        return {
          ...grant,
          release: () => {
            releaseShared();
            grant.release();
          },
        };
      } catch (error) {
        grant.release();
        throw error;
      }
    });
    return {
      granted,
      reason: () => turn.reason() ?? (second === null ? null : sharedReason(second.position())),
    };
  }
}

function sharedReason(position: number): QueueReason | null {
  return position === 0 ? null : { kind: 'shared_cap', ahead: position - 1 };
}
