import { randomUUID } from 'node:crypto';
import type { ProcView } from '../../policy/process-identity.js';
import type { SelfIdentity } from '../processes/proc-reader.js';
import { parseHolder } from '../holder.js';
import { slotView, type ReleaseSharedSlot, type SlotTable, type SlotTableOptions, type SlotView } from './slot-table.js';

/** A slot is held for this long unless renewed; its holder renews it every third of it. */
const DEFAULT_SLOT_LEASE_MS = 15_000;

/** Team mode's Redis as RedisStateStore.connection gives it. */
export interface SlotRedisConnection {
  readonly client: { sendCommand(args: string[]): Promise<unknown> };
  readonly keys: { readonly prefix: string };
  /** Resolves once the first connection is made or has failed (bounded). */
  readonly connected: () => Promise<void>;
  /** The Redis URL with its password as `***`. */
  readonly location: string;
}

interface RedisSlotTableOptions extends SlotTableOptions {
  readonly connection: SlotRedisConnection;
  /** @default DEFAULT_SLOT_LEASE_MS */
  readonly leaseMs?: number;
}

/** KEYS: the slots; ARGV: holder, lease ms. Takes the first free slot; its index (0-based) or -1. */
const CLAIM_SCRIPT = `for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then return i - 1 end
end
return -1`;

/** KEYS: one slot; ARGV: holder. Deletes it only if this holder still holds it. */
const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** KEYS: slots; ARGV: their holders, then the lease ms. Extends each lease still held by its holder; 1/0 each. */
const RENEW_SCRIPT = `local n = #KEYS
local kept = {}
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    redis.call('PEXPIRE', KEYS[i], ARGV[n + 1])
    kept[i] = 1
  else
    kept[i] = 0
  end
end
return kept`;

/**
 * The shared cap's slots in team mode's Redis, so it holds across machines: slot `i` is the key
 * `<prefix>slot:<i>`, whose value is its holder (host, pid, start time, boot, pid namespace, claim
 * time and a random id, as JSON). A claim is one Lua script taking the first free slot with
 * `SET NX PX lease`; the holder renews its leases every third of the lease while it holds them; a
 * release deletes the key only if it still names this holder (compare-and-delete). A holder whose
 * machine died or lost Redis stops renewing, and its slot frees itself when the lease runs out:
 * that is the liveness test across machines (/proc cannot see them).
 *
 * Every failure (Redis down or slow) throws from `claim`, and SharedSlots then lets runs go ahead
 * uncapped; a release or renewal that fails is left to the lease.
 */
export class RedisSlotTable implements SlotTable {
  readonly limit: number;
  readonly sharedBy = 'servers on every machine sharing the Redis';
  readonly leaseMs: number;
  readonly #connection: SlotRedisConnection;
  readonly #identity: SelfIdentity;
  readonly #proc: ProcView;
  readonly #warn: (message: string) => void;
  readonly #keys: string[];
  /** Slot key -> the holder value this process wrote there. */
  readonly #held = new Map<string, string>();
  #renewal: NodeJS.Timeout | undefined;
  readonly #releasing = new Set<Promise<unknown>>();

  constructor(options: RedisSlotTableOptions) {
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? DEFAULT_SLOT_LEASE_MS;
    this.#connection = options.connection;
    this.#identity = options.identity;
    this.#proc = options.proc;
    this.#warn = options.warn;
    this.#keys = Array.from({ length: this.limit }, (_, slot) => `${options.connection.keys.prefix}slot:${slot}`);
  }

  get location(): string {
    return this.#connection.location;
  }

  async claim(): Promise<ReleaseSharedSlot | null> {
    const { self, place } = this.#identity;
    const holder = JSON.stringify({ pid: self.pid, start: self.start, ...place, at: Date.now(), id: randomUUID() });
    const reply = Number(await this.#send(evalArgs(CLAIM_SCRIPT, this.#keys, holder, String(this.leaseMs))));
    if (!(reply >= 0)) return null;
    const key = this.#keys[reply]!;
    this.#held.set(key, holder);
    this.#startRenewing();
    return () => this.#release(key, holder);
  }

  /** Held slots free themselves when their lease runs out: nothing to reclaim. */
  reclaim(): number {
    return 0;
  }

  async view(): Promise<SlotView[]> {
    const values = (await this.#send(['MGET', ...this.#keys])) as (string | null)[];
    const views: SlotView[] = [];
    values.forEach((value, slot) => {
      if (value === null || value === undefined) return;
      const mine = this.#held.get(this.#keys[slot]!) === String(value);
      views.push(slotView(slot, parseHolder(String(value)), mine, this.#identity.place, this.#proc));
    });
    return views;
  }

  /** Waiting across machines is not ordered: whoever polls first when a slot frees takes it. */
  markWaiting(): void {}

  olderWaiterElsewhere(): boolean {
    return false;
  }

  /** One command, once connected; its failure as an Error saying why in a few words (no secret: node-redis's messages hold none). */
  async #send(args: string[]): Promise<unknown> {
    await this.#connection.connected();
    try {
      return await this.#connection.client.sendCommand(args);
    } catch (error) {
      throw new Error(reasonOf(error));
    }
  }

  #release(key: string, holder: string): void {
    if (this.#held.get(key) !== holder) return;
    this.#held.delete(key);
    if (this.#held.size === 0) this.#stopRenewing();
    // Sent at once, before any claim that follows on this connection; on failure the lease frees it.
    const sent = this.#connection.client.sendCommand(evalArgs(RELEASE_SCRIPT, [key], holder)).catch(() => {});
    this.#releasing.add(sent);
    void sent.finally(() => this.#releasing.delete(sent));
  }

  /** At shutdown: wait for the releases sent (each bounded by the client's command timeout), so no slot waits for its lease. */
  async idle(): Promise<void> {
    this.#stopRenewing();
    await Promise.allSettled([...this.#releasing]);
  }

  #startRenewing(): void {
    if (this.#renewal) return;
    this.#renewal = setInterval(() => void this.#renew(), Math.max(1, Math.floor(this.leaseMs / 3)));
    this.#renewal.unref();
  }

  #stopRenewing(): void {
    clearInterval(this.#renewal);
    this.#renewal = undefined;
  }

  async #renew(): Promise<void> {
    const held = [...this.#held];
    if (held.length === 0) return;
    const keys = held.map(([key]) => key);
    const holders = held.map(([, holder]) => holder);
    const kept = await this.#connection.client
      .sendCommand(evalArgs(RENEW_SCRIPT, keys, ...holders, String(this.leaseMs)))
      .catch(() => null); // Redis unreachable: tried again at the next tick, while the lease lasts
    if (!Array.isArray(kept)) return;
    held.forEach(([key, holder], index) => {
      if (Number(kept[index]) === 1 || this.#held.get(key) !== holder) return;
      this.#held.delete(key);
      this.#warn(
        `shared concurrency slot ${this.#keys.indexOf(key)} at ${this.location}: its lease ran out before it was renewed (Redis unreachable or too slow for ${this.leaseMs} ms), so another server may use it; this run goes on`,
      );
    });
    if (this.#held.size === 0) this.#stopRenewing();
  }
}

/** EVAL's arguments: the script, its keys, then its other arguments. */
function evalArgs(script: string, keys: readonly string[], ...args: string[]): string[] {
  return ['EVAL', script, String(keys.length), ...keys, ...args];
}

/** node-redis's errors by class: `The client is offline` says little to an operator. */
function reasonOf(error: unknown): string {
  const kind = (error as object | null)?.constructor?.name;
  if (kind === 'ClientOfflineError' || kind === 'ClientClosedError') return 'not connected to Redis (reconnecting)';
  if (kind === 'TimeoutError') return 'Redis did not answer in time';
  if (error instanceof AggregateError && error.errors.length > 0) return reasonOf(error.errors[0]);
  return (error as Error).message || String(error);
}
