/** `#lengths` of a slot never used: lookups stop here. */
const EMPTY = -1;
/** `#lengths` of a slot whose key was taken or moved: lookups go on past it, inserts may reuse it. */
const REMOVED = -2;
/** A table fuller than this (live, dead and removed slots) is rebuilt with its live entries only. */
const MAX_FILL = 0.7;
/** Slots to begin with; the table doubles as it fills, up to what its limit needs. */
const INITIAL_CAPACITY = 1024;
/** Key characters stored per slot to begin with (task ids are short); the store grows when needed. */
const CHARS_PER_ENTRY = 8;

/**
 * Attempt counts of the most recently seen keys, at most `limit` of them, O(1) per operation: two
 * generations of `limit / 2`; when the young one is full the old one is dropped.
 *
 * The same answers as two `Map`s swapped per generation, without their cost on a large log (a
 * million distinct task ids): each new generation's Map grew from empty through every power of
 * two, and every key string lived long enough to be promoted to the old heap and die there, which
 * made most of the report's peak memory. Here one open-addressing table in typed arrays, allocated
 * once and rebuilt into a spare one, holds both generations, and the keys' characters are copied
 * into a character store, so no key string outlives the line it came from. An entry is young when
 * stamped with the current generation, old with the previous one, and dead (a free slot) with any
 * earlier one, so dropping a generation costs nothing.
 */
export class RecentCounts {
  readonly #half: number;
  /** The most slots the table grows to: room for both full generations. */
  readonly #maxCapacity: number;
  #mask: number;
  #table: Table;
  /** The spare table that the next rebuild fills (made then, when missing or too small). */
  #spare: Table | null = null;
  /** The young generation's stamp; the old one's is `#generation - 1`. Starts past 0 so 0 is dead. */
  #generation = 2;
  #youngSize = 0;
  /** Slots not EMPTY (live, dead or removed): lookups stop only at EMPTY. */
  #used = 0;
  /** Characters used in `#table.chars`. */
  #charsUsed = 0;

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
    let capacity = 16;
    while (capacity * MAX_FILL < 2 * this.#half + 1) capacity *= 2;
    this.#maxCapacity = capacity;
    // Small to begin with: a summary of a short log (the ollama_runs_summary tool) allocates little.
    capacity = Math.min(capacity, INITIAL_CAPACITY);
    this.#mask = capacity - 1;
    this.#table = new Table(capacity, capacity * CHARS_PER_ENTRY);
  }

  increment(key: string): void {
    const h = hash(key);
    // One walk along the key's probe path finds it, or the first slot a new key may take.
    const t = this.#table;
    const oldest = this.#generation - 1;
    let free = -1;
    let at = h & this.#mask;
    for (; ; at = (at + 1) & this.#mask) {
      const length = t.lengths[at]!;
      if (length === EMPTY) break;
      if (length < 0 || t.stamps[at]! < oldest) {
        if (free === -1) free = at;
      } else if (length === key.length && t.hashes[at] === h && t.holds(at, key)) break;
    }
    let count = 1;
    if (t.lengths[at] !== EMPTY) {
      if (t.stamps[at] === this.#generation) {
        t.counts[at]! += 1;
        return;
      }
      count += t.counts[at]!; // old: moves to the young generation
      t.lengths[at] = REMOVED;
      if (free === -1) free = at;
    }
    if (this.#youngSize >= this.#half) {
      this.#generation += 1; // the young generation becomes the old one; the old one is dropped
      this.#youngSize = 0;
    }
    this.#youngSize += 1;
    if (this.#full(key.length)) {
      this.#insert(key, h, count); // rebuilds first; the slots found above moved
      return;
    }
    // The generation may just have moved on: a slot found free stays free, and the EMPTY one ends the path.
    if (free === -1) {
      free = at;
      this.#used += 1;
    }
    this.#put(t, free, key, h, count);
  }

  /** The count of `key` (0 when unknown or forgotten), and forget it. */
  take(key: string): number {
    const at = this.#find(key, hash(key));
    if (at === -1) return 0;
    const t = this.#table;
    if (t.stamps[at] === this.#generation) this.#youngSize -= 1;
    t.lengths[at] = REMOVED;
    return t.counts[at]!;
  }

  /** The live slot of `key`, or -1. */
  #find(key: string, h: number): number {
    const t = this.#table;
    const oldest = this.#generation - 1;
    for (let at = h & this.#mask; ; at = (at + 1) & this.#mask) {
      const length = t.lengths[at]!;
      if (length === EMPTY) return -1;
      if (length === key.length && t.hashes[at] === h && t.stamps[at]! >= oldest && t.holds(at, key)) return at;
    }
  }

  /** Puts a key known to be absent in the first free slot on its path. */
  #insert(key: string, h: number, count: number): void {
    if (this.#full(key.length)) this.#rebuild(key.length);
    const t = this.#table;
    const oldest = this.#generation - 1;
    for (let at = h & this.#mask; ; at = (at + 1) & this.#mask) {
      const length = t.lengths[at]!;
      if (length < 0 || t.stamps[at]! < oldest) {
        if (length === EMPTY) this.#used += 1;
        this.#put(t, at, key, h, count);
        return;
      }
    }
  }

  /** Whether one more key of `chars` characters needs a rebuild first: a slot past MAX_FILL, or no room for its characters. */
  #full(chars: number): boolean {
    return this.#used + 1 > (this.#mask + 1) * MAX_FILL || this.#charsUsed + chars > this.#table.chars.length;
  }

  #put(t: Table, at: number, key: string, h: number, count: number): void {
    for (let i = 0; i < key.length; i++) t.chars[this.#charsUsed + i] = key.charCodeAt(i);
    t.offsets[at] = this.#charsUsed;
    this.#charsUsed += key.length;
    t.lengths[at] = key.length;
    t.hashes[at] = h;
    t.counts[at] = count;
    t.stamps[at] = this.#generation;
  }

  /**
   * Moves the live entries into the spare table, which becomes the table: twice as large when they
   * fill more than half of what is allowed, with room for `needed` more characters.
   */
  #rebuild(needed: number): void {
    const oldest = this.#generation - 1;
    const from = this.#table;
    let live = 0;
    let liveChars = 0;
    for (let i = 0; i <= this.#mask; i++) {
      if (from.lengths[i]! >= 0 && from.stamps[i]! >= oldest) {
        live += 1;
        liveChars += from.lengths[i]!;
      }
    }
    let capacity = this.#mask + 1;
    while (capacity < this.#maxCapacity && live + 1 > (capacity * MAX_FILL) / 2) capacity *= 2;
    const chars = Math.max(capacity * CHARS_PER_ENTRY, 2 * (liveChars + needed));
    let to = this.#spare;
    if (to === null || to.lengths.length !== capacity || to.chars.length < 2 * (liveChars + needed))
      to = new Table(capacity, chars);
    else to.lengths.fill(EMPTY);
    const mask = capacity - 1;
    let used = 0;
    let charsUsed = 0;
    for (let i = 0; i <= this.#mask; i++) {
      const length = from.lengths[i]!;
      if (length < 0 || from.stamps[i]! < oldest) continue;
      let at = from.hashes[i]! & mask;
      while (to.lengths[at] !== EMPTY) at = (at + 1) & mask;
      // Copied char by char: a subarray per entry to `set` from cost more than the copy (task ids are short).
      const offset = from.offsets[i]!;
      for (let k = 0; k < length; k++) to.chars[charsUsed + k] = from.chars[offset + k]!;
      to.offsets[at] = charsUsed;
      charsUsed += length;
      to.lengths[at] = length;
      to.hashes[at] = from.hashes[i]!;
      to.counts[at] = from.counts[i]!;
      to.stamps[at] = from.stamps[i]!;
      used += 1;
    }
    this.#spare = from.lengths.length === capacity ? from : null; // a smaller one is garbage now
    this.#table = to;
    this.#mask = mask;
    this.#used = used;
    this.#charsUsed = charsUsed;
  }
}

/** One open-addressing table: per slot a key (its characters in `chars`), its count and generation. */
class Table {
  readonly offsets: Int32Array;
  readonly lengths: Int32Array;
  readonly hashes: Int32Array;
  readonly counts: Float64Array;
  readonly stamps: Int32Array;
  readonly chars: Uint16Array;

  constructor(capacity: number, chars: number) {
    this.offsets = new Int32Array(capacity);
    this.lengths = new Int32Array(capacity).fill(EMPTY);
    this.hashes = new Int32Array(capacity);
    this.counts = new Float64Array(capacity);
    this.stamps = new Int32Array(capacity);
    this.chars = new Uint16Array(chars);
  }

  /** Whether slot `at` holds `key` (its length already checked). */
  holds(at: number, key: string): boolean {
    const offset = this.offsets[at]!;
    for (let i = 0; i < key.length; i++) if (this.chars[offset + i] !== key.charCodeAt(i)) return false;
    return true;
  }
}

/** FNV-1a over the UTF-16 code units, as a signed 32-bit integer (what `Int32Array` keeps). */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h | 0;
}
