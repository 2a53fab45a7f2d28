/** Marks a slot whose key was removed: lookups go on past it, inserts may reuse it. */
const REMOVED = Object.freeze({ removed: true });
type Slot = string | typeof REMOVED | undefined;

/** A table fuller than this (live, dead and removed slots) is rebuilt with its live entries only. */
const MAX_FILL = 0.7;

/**
 * Attempt counts of the most recently seen keys, at most `limit` of them, O(1) per operation: two
 * generations of `limit / 2`; when the young one is full the old one is dropped.
 *
 * The same answers as two `Map`s swapped per generation, without their cost on a large log (a
 * million distinct task ids): each new generation's Map grew from empty through every power of
 * two, and the dropped tables and the promoted keys made most of the report's peak memory. Here
 * one open-addressing table, allocated once and rebuilt in place into a second one, holds both
 * generations: an entry is young when stamped with the current generation, old with the previous
 * one, and dead (a free slot) with any earlier one, so dropping a generation costs nothing.
 */
export class RecentCounts {
  readonly #half: number;
  readonly #mask: number;
  #keys: Slot[];
  #counts: Float64Array;
  #stamps: Int32Array;
  /** The spare table that the next rebuild fills. */
  #spareKeys: Slot[];
  #spareCounts: Float64Array;
  #spareStamps: Int32Array;
  /** The young generation's stamp; the old one's is `#generation - 1`. Starts past 0 so 0 is dead. */
  #generation = 2;
  #youngSize = 0;
  /** Slots not `undefined` (live, dead or removed): lookups stop only at `undefined`. */
  #used = 0;

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
    let capacity = 16;
    while (capacity * MAX_FILL < 2 * this.#half + 1) capacity *= 2;
    this.#mask = capacity - 1;
    this.#keys = new Array<Slot>(capacity).fill(undefined);
    this.#counts = new Float64Array(capacity);
    this.#stamps = new Int32Array(capacity);
    this.#spareKeys = new Array<Slot>(capacity).fill(undefined);
    this.#spareCounts = new Float64Array(capacity);
    this.#spareStamps = new Int32Array(capacity);
  }

  increment(key: string): void {
    const at = this.#find(key);
    let count = 1;
    if (at !== -1) {
      if (this.#stamps[at] === this.#generation) {
        this.#counts[at]! += 1;
        return;
      }
      count += this.#counts[at]!; // old: moves to the young generation
      this.#keys[at] = REMOVED;
    }
    if (this.#youngSize >= this.#half) {
      this.#generation += 1; // the young generation becomes the old one; the old one is dropped
      this.#youngSize = 0;
    }
    this.#insert(key, count);
    this.#youngSize += 1;
  }

  /** The count of `key` (0 when unknown or forgotten), and forget it. */
  take(key: string): number {
    const at = this.#find(key);
    if (at === -1) return 0;
    if (this.#stamps[at] === this.#generation) this.#youngSize -= 1;
    this.#keys[at] = REMOVED;
    return this.#counts[at]!;
  }

  /** The live slot of `key`, or -1. */
  #find(key: string): number {
    const oldest = this.#generation - 1;
    for (let at = hash(key) & this.#mask; ; at = (at + 1) & this.#mask) {
      const slot = this.#keys[at];
      if (slot === undefined) return -1;
      if (slot === key && this.#stamps[at]! >= oldest) return at;
    }
  }

  /** Puts a key known to be absent in the first free slot on its path. */
  #insert(key: string, count: number): void {
    if (this.#used + 1 > (this.#mask + 1) * MAX_FILL) this.#rebuild();
    const oldest = this.#generation - 1;
    for (let at = hash(key) & this.#mask; ; at = (at + 1) & this.#mask) {
      const slot = this.#keys[at];
      if (slot === undefined || slot === REMOVED || this.#stamps[at]! < oldest) {
        if (slot === undefined) this.#used += 1;
        this.#keys[at] = key;
        this.#counts[at] = count;
        this.#stamps[at] = this.#generation;
        return;
      }
    }
  }

  /** Moves the live entries into the spare table, which becomes the table. */
  #rebuild(): void {
    const oldest = this.#generation - 1;
    const keys = this.#spareKeys;
    const counts = this.#spareCounts;
    const stamps = this.#spareStamps;
    keys.fill(undefined);
    let used = 0;
    for (let from = 0; from <= this.#mask; from++) {
      const slot = this.#keys[from];
      if (typeof slot !== 'string' || this.#stamps[from]! < oldest) continue;
      let at = hash(slot) & this.#mask;
      while (keys[at] !== undefined) at = (at + 1) & this.#mask;
      keys[at] = slot;
      counts[at] = this.#counts[from]!;
      stamps[at] = this.#stamps[from]!;
      used += 1;
    }
    this.#keys.fill(undefined); // let the dropped keys go
    this.#spareKeys = this.#keys;
    this.#spareCounts = this.#counts;
    this.#spareStamps = this.#stamps;
    this.#keys = keys;
    this.#counts = counts;
    this.#stamps = stamps;
    this.#used = used;
  }
}

/** FNV-1a over the UTF-16 code units. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
