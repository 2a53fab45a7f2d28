import type { Timeline, TimelineEvent } from './summary-schema.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** Bucket sizes tried in order; past the last one, sizes keep doubling. Each is a multiple of the one before. */
const LADDER_MS = [MINUTE, 5 * MINUTE, 15 * MINUTE, 60 * MINUTE, 360 * MINUTE, DAY, 7 * DAY];
/** Buckets at most. */
const MAX_BUCKETS = 200;

interface BucketCounts {
  runs: number;
  failures: number;
  escalations: number;
}

interface PendingEvent extends Omit<TimelineEvent, 'ts'> {
  readonly tsMs: number;
}

/**
 * Runs, failures and escalations per time bucket, in memory bounded by `MAX_BUCKETS` whatever the
 * number of records and in whatever order they come: it starts at one-minute buckets and, whenever
 * the span from the earliest to the latest record needs more than `MAX_BUCKETS`, merges them into the
 * next size (5m, 15m, 1h, 6h, 1d, 7d, then doubling). The result is the finest size on that ladder
 * that shows the whole range in `MAX_BUCKETS` buckets. Buckets are aligned to the Unix epoch (UTC).
 *
 * Also keeps the `maxEvents` most recent escalation and circuit-opening events.
 */
export class TimelineAccumulator {
  #step = 0;
  #sizeMs = LADDER_MS[0]!;
  #buckets = new Map<number, BucketCounts>();
  #minKey = Infinity;
  #maxKey = -Infinity;
  #events: PendingEvent[] = [];
  #eventsTruncated = false;

  constructor(readonly maxEvents: number) {}

  /** Counts one run that finished at `tsMs` (epoch milliseconds). */
  addRun(tsMs: number, failed: boolean, escalated: boolean): void {
    this.#addTo(Math.floor(tsMs / this.#sizeMs), { runs: 1, failures: failed ? 1 : 0, escalations: escalated ? 1 : 0 });
    while (this.#maxKey - this.#minKey + 1 > MAX_BUCKETS) this.#coarsen();
  }

  addEvent(event: PendingEvent): void {
    this.#events.push(event);
    if (this.#events.length >= 2 * this.maxEvents) this.#trimEvents();
  }

  /** The timeline without `loads`, which `ModelLoads` counts. */
  result(): Omit<Timeline, 'loads' | 'loads_truncated'> {
    this.#trimEvents();
    const buckets: Timeline['buckets'] = [];
    if (this.#buckets.size > 0) {
      for (let key = this.#minKey; key <= this.#maxKey; key++) {
        const counts = this.#buckets.get(key) ?? { runs: 0, failures: 0, escalations: 0 };
        buckets.push({ start: new Date(key * this.#sizeMs).toISOString(), ...counts });
      }
    }
    return {
      bucket: label(this.#sizeMs),
      bucket_seconds: this.#sizeMs / 1000,
      buckets,
      events: this.#events.map(({ tsMs, ...rest }) => ({ ts: new Date(tsMs).toISOString(), ...rest })),
      events_truncated: this.#eventsTruncated,
    };
  }

  #addTo(key: number, counts: BucketCounts): void {
    const into = this.#buckets.get(key);
    if (into === undefined) {
      this.#buckets.set(key, { ...counts });
      this.#minKey = Math.min(this.#minKey, key);
      this.#maxKey = Math.max(this.#maxKey, key);
      return;
    }
    into.runs += counts.runs;
    into.failures += counts.failures;
    into.escalations += counts.escalations;
  }

  /** Merges the buckets into the next size of the ladder. */
  #coarsen(): void {
    this.#step += 1;
    const [size, old] = [this.#sizeMs, this.#buckets];
    this.#sizeMs = this.#step < LADDER_MS.length ? LADDER_MS[this.#step]! : size * 2;
    [this.#buckets, this.#minKey, this.#maxKey] = [new Map(), Infinity, -Infinity];
    for (const [key, counts] of old) this.#addTo(Math.floor((key * size) / this.#sizeMs), counts);
  }

  /** Keeps the most recent maxEvents, oldest first (a stable sort keeps file order among equal times). */
  #trimEvents(): void {
    this.#events.sort((a, b) => a.tsMs - b.tsMs);
    if (this.#events.length > this.maxEvents) {
      this.#events.splice(0, this.#events.length - this.maxEvents);
      this.#eventsTruncated = true;
    }
  }
}

function label(sizeMs: number): string {
  if (sizeMs % DAY === 0) return `${sizeMs / DAY}d`;
  if (sizeMs % (60 * MINUTE) === 0) return `${sizeMs / (60 * MINUTE)}h`;
  return `${sizeMs / MINUTE}m`;
}
